import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { attemptIdFor, runIdFor } from '../../src/domain/ids.js';
import { browserMissing, inCi, launchBrowser, type TestBrowser } from './browser.js';
import { dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 15_000 };

if (browserMissing !== undefined && !inCi) console.log(`statechart browser test skipped: ${browserMissing}`);

/** The moves a chart's path table lists, `from→to:event:actor` each. */
async function pathOf(page: Page): Promise<string[]> {
  return page.getByTestId('path-step').evaluateAll((rows) =>
    rows.map((row) => {
      const cells = [...row.querySelectorAll('td')].map((td) => td.childNodes[0]?.textContent?.trim() ?? '');
      return `${row.getAttribute('data-from')}→${row.getAttribute('data-to')}:${cells[3]}:${cells[4]}`;
    }),
  );
}

/** Where a chart's drawing marks the state it is in, the states visited and the transitions taken. */
async function marks(page: Page): Promise<{ current: string[]; taken: string[] }> {
  const chart = page.getByTestId('entity-chart');
  const current = await chart.locator('g.node.current').evaluateAll((g) => g.map((n) => n.getAttribute('data-state')!));
  const taken = await chart
    .locator('g.edge.taken')
    .evaluateAll((g) => g.map((n) => n.getAttribute('data-transition')!).sort());
  return { current, taken };
}

describe.skipIf(browserMissing !== undefined)('live statecharts in a real browser (Debian chromium)', () => {
  let world: DashboardWorld;
  let browser: TestBrowser;
  let page: Page;
  const pageErrors: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    ensureDashboardBuilt();
    world = await dashboardWorld();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 500) pageErrors.push(`${response.status()} ${response.url()}`);
    });
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    await page.getByTestId('live').filter({ hasText: 'live' }).waitFor(WAIT);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('machine-wide view: live occurrences counted per state on the drawn machine, following the changefeed', async () => {
    const counts = page.getByTestId('machine-counts');
    await counts.filter({ hasText: 'live-work index' }).waitFor(WAIT);
    expect(await counts.getAttribute('data-live')).toBe('0');
    // Every non-terminal state of occurrence.v1 is listed; terminal ones are history and carry no count.
    const states = await page.locator('[data-testid^="count-"]').evaluateAll((r) => r.map((n) => n.dataset.testid));
    expect(states).toEqual(
      ['planned', 'eligible', 'claimed', 'dispatching', 'running', 'recovering', 'recovery_required'].map(
        (s) => `count-${s}`,
      ),
    );

    await page.getByTestId('run-now-daily-notes').click();
    await page.locator('[data-testid="machine-counts"][data-live="1"]').waitFor(WAIT);
    // run-now launches inside its command: the occurrence is running on the simulated runtime.
    await page.locator('[data-testid="count-running"][data-count="1"]').waitFor(WAIT);
    const running = counts.locator('g.node.occupied[data-state="running"]');
    expect(await running.locator('text.state-count').textContent()).toBe('1');
    expect(await counts.locator('g.node.occupied').count()).toBe(1);

    await page.getByTestId('machine-attempt').click();
    await page.locator('[data-testid="machine-counts"][data-machine="attempt.v1"][data-live="1"]').waitFor(WAIT);
    await page.locator('[data-testid="count-observing"][data-count="1"]').waitFor(WAIT);
    await page.getByTestId('machine-occurrence').click();
    await page.locator('[data-testid="machine-counts"][data-machine="occurrence.v1"]').waitFor(WAIT);
  }, 60_000);

  test('an occurrence: its current state highlighted and its path, updated live as the engine moves it', async () => {
    const [occurrenceId] = await world.store.read(async (r) => (await r.liveWork('occurrence')).map((e) => e.id));
    await page.getByTestId(`chart-occurrence-${occurrenceId}`).click();
    await page.locator('[data-testid="entity-chart"][data-state="running"]').waitFor(WAIT);
    expect(await pathOf(page)).toEqual([
      'none→planned:manual_request:—',
      'planned→eligible:eligibility_passed:scheduler',
      'eligible→claimed:claim:scheduler',
      'claimed→dispatching:attempt_adopted:dispatcher',
      'dispatching→running:runtime_started:dispatcher',
    ]);
    expect(await marks(page)).toEqual({
      current: ['running'],
      taken: [
        'claimed->dispatching:attempt_adopted',
        'dispatching->running:runtime_started',
        'eligible->claimed:claim',
        'planned->eligible:eligibility_passed',
      ],
    });
    const firstStep = page.getByTestId('path-step').first();
    expect(await firstStep.locator('time').getAttribute('datetime')).toBe('2026-03-02T08:00:00.000Z');
    expect(await firstStep.textContent()).toContain('engine-dashboard');

    // The engine's pass settles the session; the open chart follows from the changefeed, no reload.
    await world.pass(2);
    await page.locator('[data-testid="entity-chart"][data-state="succeeded"]').waitFor(WAIT);
    expect((await pathOf(page)).slice(5)).toEqual(['running→succeeded:run_settled:dispatcher']);
    expect((await marks(page)).current).toEqual(['succeeded']);
    expect((await marks(page)).taken).toContain('running->succeeded:run_settled');
    await page.locator('[data-testid="machine-counts"][data-live="0"]').waitFor(WAIT);
  }, 60_000);

  test('a run, an attempt and a definition: each on its own machine; the picker draws any entity by id', async () => {
    const [occurrenceId] = await world.store.read(async (r) =>
      (await r.list<{ snapshot: { value: string } }>('occurrence')).map((o) => o.id),
    );
    const runId = runIdFor(occurrenceId!);
    const attemptId = attemptIdFor(runId, 1);
    await page.getByTestId('view-all').click();
    await page.getByTestId(`open-${occurrenceId}`).click();
    await page.getByTestId(`chart-run-${runId}`).first().click();
    await page.locator('[data-testid="entity-chart"][data-entity="run"][data-state="succeeded"]').waitFor(WAIT);
    expect(await pathOf(page)).toEqual([
      'none→accepted:fence_accepted:—',
      'accepted→running:attempt_started:dispatcher',
      'running→succeeded:attempt_settled:dispatcher',
    ]);

    await page.getByTestId(`chart-attempt-${attemptId}`).click();
    await page.locator('[data-testid="entity-chart"][data-entity="attempt"][data-state="succeeded"]').waitFor(WAIT);
    expect(await pathOf(page)).toEqual([
      'none→adopted:adopted:—',
      'adopted→dispatching:dispatch:dispatcher',
      'dispatching→started:runtime_started:dispatcher',
      'started→observing:evidence_stream_open:worker',
      'observing→succeeded:run_settled:worker',
    ]);

    await page.getByTestId('chart-definition-daily-notes').first().click();
    await page.locator('[data-testid="entity-chart"][data-entity="definition"][data-state="active"]').waitFor(WAIT);
    expect(await pathOf(page)).toEqual([
      'none→draft:definition.created:command_handler',
      'draft→paused:definition_revise_committed:command_handler',
      'paused→active:definition_activated:command_handler',
    ]);
    expect(await marks(page)).toEqual({
      current: ['active'],
      taken: ['draft->paused:definition_revise_committed', 'paused->active:definition_activated'],
    });

    await page.getByTestId('chart-kind').selectOption('attempt');
    await page.getByTestId('chart-id').fill(attemptId);
    await page.getByTestId('chart-id').press('Enter');
    await page.locator('[data-testid="entity-chart"][data-entity="attempt"]').waitFor(WAIT);
    expect(await page.getByTestId('path-step').count()).toBe(5);

    const shot = join(world.dir, 'console-statecharts.png');
    await page.getByTestId('machine-occurrence').click();
    await page.getByTestId(`chart-occurrence-${occurrenceId}`).click();
    await page.locator('[data-testid="entity-chart"][data-entity="occurrence"]').waitFor(WAIT);
    await page.locator('#statecharts-section').screenshot({ path: shot });
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-statecharts.png'));
  }, 60_000);

  test('at 800 px the panels fit: each drawing scrolls inside its panel, the tables and the editor wrap', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    try {
      await page.getByTestId('edit-daily-notes').dispatchEvent('click');
      await page.getByTestId('preview-slot').first().waitFor(WAIT);
      const overflow = await Promise.all(
        ['#statecharts-section', '#editor-section'].map(async (id) => ({
          id,
          fits: await page
            .locator(id)
            .evaluate((section) => section.scrollWidth <= section.clientWidth && section.clientWidth <= 800),
        })),
      );
      expect(overflow).toEqual([
        { id: '#statecharts-section', fits: true },
        { id: '#editor-section', fits: true },
      ]);
    } finally {
      await page.setViewportSize({ width: 1400, height: 1000 });
    }
  }, 60_000);

  test('offline: the page drew every machine from its own bundle and asked nothing but the daemon', () => {
    expect(requests.filter((url) => !url.startsWith(`${world.url}/`))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
