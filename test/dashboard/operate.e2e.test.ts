import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { dashboardRoutes } from '../../src/daemon/dashboard-routes.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { command } from '../support/commands.js';
import { browserMissing, launchBrowser, type TestBrowser } from './browser.js';
import { addActiveDefinition, dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 15_000 };
const OPS = ['ops-a', 'ops-b', 'ops-c', 'ops-d', 'ops-e'];

if (browserMissing !== undefined) console.log(`operate browser test skipped: ${browserMissing}`);

/** A command the page sent: its name, adoption key and payload. */
interface Sent {
  command: string;
  adoptionKey: string;
  payload: Record<string, unknown>;
}

describe.skipIf(browserMissing !== undefined)('operating failures from the console (Debian chromium)', () => {
  let world: DashboardWorld;
  let runtime: FunctionRuntime;
  let browser: TestBrowser;
  let page: Page;
  const failing = new Set(OPS);
  const sent: Sent[] = [];
  const pageErrors: string[] = [];

  const handle = async (name: string, payload: Record<string, unknown>, expectedRevision?: number) =>
    world.engine.commands.handle(command(name, payload, expectedRevision === undefined ? {} : { expectedRevision }));
  /** Lets the sessions finish and runs one engine pass, as the running engine would. */
  const settle = async () => {
    await runtime.drain();
    await world.pass(1);
  };
  const runOf = async (automationId: string): Promise<{ runId: string; occurrenceId: string; state: string }> => {
    const history = await handle('run.history.v1', { automationId, limit: 1 });
    return (history.result as { runs: Array<{ runId: string; occurrenceId: string; state: string }> }).runs[0]!;
  };
  const message = (text: string) => page.getByTestId('message').filter({ hasText: text }).waitFor(WAIT);

  beforeAll(async () => {
    ensureDashboardBuilt();
    runtime = new FunctionRuntime('coven-code', async (request) =>
      failing.has(request.automationId)
        ? { outcome: 'failed', output: `loading ${request.automationId}\nboom: ${request.automationId} unreachable\n` }
        : { outcome: 'succeeded', output: 'ok\n' },
    );
    world = await dashboardWorld([dashboardRoutes()], runtime);
    for (const id of OPS) await addActiveDefinition(world.engine, id, { tags: ['ops'], timezone: 'America/New_York' });
    for (const id of OPS)
      expect((await handle('occurrence.runNow.v1', { automationId: id })).outcome).toBe('committed');
    await settle();
    browser = await launchBrowser({ timezoneId: 'Europe/Berlin' });
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/api/v1/actions')) {
        const body = JSON.parse(request.postData() ?? '{}') as Sent;
        if (!body.command.includes('.get.') && !body.command.includes('.list.') && !body.command.includes('history'))
          if (!body.command.includes('health') && !body.command.includes('receipt'))
            sent.push({ command: body.command, adoptionKey: body.adoptionKey, payload: body.payload });
      }
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('held runs are listed with their error, exit code, output tail and "held until" in both zones', async () => {
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    const { runId } = await runOf('ops-a');
    const row = page.getByTestId(`failed-run-${runId}`);
    await row.waitFor(WAIT);
    expect(await row.getAttribute('data-held')).toBe('true');
    expect(await page.locator('[data-testid^="failed-run-"]').count()).toBe(OPS.length);
    expect(await row.getByTestId('exit').textContent()).toBe('attempt 1: runtime_error, exit 1');
    expect(await row.getByTestId('output-tail').textContent()).toBe('loading ops-a\nboom: ops-a unreachable\n');
    // The hold ends at the run's deadline, shown in the definition's zone and the viewer's.
    expect(await row.getByTestId('held-until').textContent()).toMatch(/America\/New_York · .* Europe\/Berlin/);
    const shot = join(world.dir, 'console-failures.png');
    await page.locator('#failures-section').screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-failures.png'));
  }, 60_000);

  test('retry from the list: attempt 2 runs, succeeds, and the run leaves the list', async () => {
    const { runId } = await runOf('ops-a');
    failing.delete('ops-a');
    await page.getByTestId(`failures-retry-${runId}`).click();
    await message(`retry ${runId}: committed`);
    await settle();
    await page.getByTestId(`failed-run-${runId}`).waitFor({ state: 'detached', ...WAIT });
    expect((await runOf('ops-a')).state).toBe('succeeded');
  }, 60_000);

  test('cancel from the list ends the hold: the occurrence settles cancelled', async () => {
    const { runId, occurrenceId } = await runOf('ops-b');
    await page.getByTestId(`failures-cancel-${runId}`).click();
    await message(`cancel ${occurrenceId}: committed`);
    await page.getByTestId(`failed-run-${runId}`).waitFor({ state: 'detached', ...WAIT });
    const detail = await handle('occurrence.get.v1', { occurrenceId });
    expect((detail.result as { occurrence: { state: string } }).occurrence.state).toBe('cancelled');
  }, 60_000);

  test('bulk retry over a selection: one command per run, each its own adoption key, refusals summarised', async () => {
    const c = await runOf('ops-c');
    const d = await runOf('ops-d');
    await page.getByTestId(`select-failures-${c.runId}`).check();
    await page.getByTestId(`select-failures-${d.runId}`).check();
    // Meanwhile someone else cancels ops-d: its retry is refused, ops-c's goes through.
    expect((await handle('occurrence.cancel.v1', { occurrenceId: d.occurrenceId, reason: 'elsewhere' })).outcome).toBe(
      'committed',
    );
    const before = sent.length;
    await page.getByTestId('failures-bulk-retry-selected').click();
    const summary = page.getByTestId('failures-bulk-result').getByTestId('bulk-summary');
    await summary.waitFor(WAIT);
    expect(await summary.locator('strong').textContent()).toBe('retry 2: 1 committed, 1 refused');
    expect(await summary.getByTestId('bulk-refusals').textContent()).toContain(`${d.runId} refused — `);
    const retries = sent.slice(before);
    expect(retries.map((s) => s.command)).toEqual(['attempt.retry.v1', 'attempt.retry.v1']);
    expect(new Set(retries.map((s) => s.payload.runId))).toEqual(new Set([c.runId, d.runId]));
    expect(new Set(retries.map((s) => s.adoptionKey)).size).toBe(2);
  }, 60_000);

  test('bulk pause and activate over a filter (tag ops): every match, then a summary of what was refused', async () => {
    // ops-e is paused already: its pause is refused, the other four commit.
    expect((await handle('definition.pause.v1', { automationId: 'ops-e' }, 3)).outcome).toBe('committed');
    await page.getByTestId('find-scope').selectOption('definitions');
    await page.getByTestId('find-tag').fill('ops');
    await page.getByTestId('find-submit').click();
    await page.getByTestId('found-ops-e').filter({ hasText: 'paused' }).waitFor(WAIT);
    expect(await page.locator('[data-testid^="found-"]').count()).toBe(OPS.length);
    const before = sent.length;
    await page.getByTestId('find-bulk-pause-matching').click();
    await page.getByTestId('find-bulk-confirm').click();
    const summary = page.getByTestId('find-bulk-result').getByTestId('bulk-summary');
    await summary.filter({ hasText: 'pause 5: 4 committed, 1 refused' }).waitFor(WAIT);
    expect(await summary.getByTestId('bulk-refusals').textContent()).toContain('ops-e refused — ');
    const pauses = sent.slice(before);
    expect(pauses.map((s) => s.payload.automationId).sort()).toEqual(OPS);
    expect(new Set(pauses.map((s) => s.adoptionKey)).size).toBe(OPS.length);
    for (const id of OPS) {
      const now = await handle('definition.get.v1', { automationId: id });
      expect((now.result as { lifecycleState: string }).lifecycleState).toBe('paused');
    }
    await page
      .locator('[data-testid^="found-"][data-state="active"]')
      .first()
      .waitFor({ state: 'detached', ...WAIT });
    await page.getByTestId('find-bulk-activate-matching').click();
    await page.getByTestId('find-bulk-confirm').click();
    await summary.filter({ hasText: 'activate 5: 5 committed' }).waitFor(WAIT);
    for (const id of OPS) {
      const now = await handle('definition.get.v1', { automationId: id });
      expect((now.result as { lifecycleState: string }).lifecycleState).toBe('active');
    }
  }, 60_000);

  /** How many runs the daemon holds for retry now. */
  const heldCount = async (): Promise<number> => {
    const answer = await fetch(`${world.url}/api/v1/console/runs?state=held&limit=100`, {
      headers: { authorization: `Bearer ${world.daemon.token}` },
    });
    return ((await answer.json()) as { runs: unknown[] }).runs.length;
  };
  const heldShown = (count: number) =>
    page
      .getByTestId('failures-pager')
      .filter({ hasText: `${count} shown of ${count} matching` })
      .waitFor(WAIT);

  test('a slow read of an earlier filter never paints over the filter chosen after it', async () => {
    failing.add('ops-a');
    expect((await handle('occurrence.runNow.v1', { automationId: 'ops-a' })).outcome).toBe('committed');
    await settle();
    const count = await heldCount();
    expect(count).toBeGreaterThan(1);
    // The read of "failed" is held back until the read of "held", asked for after it, has painted.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = '**/api/v1/console/runs?state=failed&**';
    await page.route(slow, async (route) => {
      await released;
      await route.continue();
    });
    const slowDone = page.waitForEvent('requestfinished', (r) => r.url().includes('state=failed&'));
    await page.getByTestId('failures-kind').selectOption('failed');
    await page.getByTestId('failures-kind').selectOption('held');
    await heldShown(count);
    release();
    await slowDone;
    // One more round trip through the page, so the slow answer's continuation has run before looking.
    await page.evaluate(async () => void (await fetch('/healthz')).status);
    await page.unroute(slow);
    expect(await page.getByTestId('failures-kind').inputValue()).toBe('held');
    expect(await page.locator('[data-testid^="failed-run-"][data-held="true"]').count()).toBe(count);
    expect(await page.locator('[data-testid^="failed-run-"][data-held="false"]').count()).toBe(0);
  }, 60_000);

  test('bulk cancel over the failures filter: every held run matching, one cancel each', async () => {
    await page.getByTestId('failures-kind').selectOption('held');
    // The page must list exactly the runs the daemon holds before "cancel matching" is asked.
    const count = await heldCount();
    expect(count).toBeGreaterThan(0);
    await heldShown(count);
    await page.getByTestId('failures-bulk-cancel-matching').click();
    await page.getByTestId('failures-bulk-confirm').click();
    await page
      .getByTestId('failures-bulk-result')
      .getByTestId('bulk-summary')
      .filter({ hasText: `cancel ${count}: ${count} committed` })
      .waitFor(WAIT);
    await page.getByTestId('no-failures').waitFor(WAIT);
  }, 60_000);

  test('the page raised no error', () => {
    expect(pageErrors).toEqual([]);
  });
});
