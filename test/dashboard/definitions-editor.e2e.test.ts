import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { Schedule } from '../../src/schedule/schedule.js';
import { command, definitionBody } from '../support/commands.js';
import { browserMissing, inCi, launchBrowser, type TestBrowser } from './browser.js';
import { dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 15_000 };

if (browserMissing !== undefined && !inCi) console.log(`definition editor browser test skipped: ${browserMissing}`);

/** A definition as an author writes it: what examples/daily-notes.json holds, for `weekly-report`. */
const WEEKLY = {
  schemaVersion: 'coven.automations.v1',
  automationId: 'weekly-report',
  display: { name: 'Weekly report' },
  trigger: {
    variant: 'schedule',
    version: 1,
    schedule: { rrule: 'FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=8', timezone: 'Europe/Berlin' },
  },
  conditions: [],
  action: { variant: 'familiarInvocation', version: 1, prompt: 'Write the weekly report.' },
  binding: {
    familiarBindingPolicy: 'exact',
    familiarId: 'charm',
    authority: { approvalPolicyRef: 'policy://authority/familiars/charm' },
  },
  runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
  policies: {
    timeout: { perRunMinutes: 30 },
    retry: { maxAttempts: 3, backoffPolicy: 'exponential', retryableClasses: ['transient_dispatch'] },
    concurrency: { overlap: 'forbid' },
    misfire: { disposition: 'latest' },
    retention: { occurrenceHistory: { classification: 'standard' } },
  },
};

const editorResult = (page: Page, text: string) =>
  page.getByTestId('editor-result').filter({ hasText: text }).waitFor(WAIT);

describe.skipIf(browserMissing !== undefined)('the definition editor in a real browser (Debian chromium)', () => {
  let world: DashboardWorld;
  let browser: TestBrowser;
  let page: Page;
  const pageErrors: string[] = [];

  const get = async (automationId: string) =>
    (await world.engine.commands.handle(command('definition.get.v1', { automationId }))).result as
      { lifecycleState: string; currentRevision: number; definition: Record<string, unknown> } | undefined;

  beforeAll(async () => {
    ensureDashboardBuilt();
    world = await dashboardWorld();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 500) pageErrors.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    await page.getByTestId('live').filter({ hasText: 'live' }).waitFor(WAIT);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('create: the schedule previewed from the engine clock before saving; a bad rule is refused in place', async () => {
    await page.getByTestId('new-definition').click();
    await page.getByTestId('preview-slot').first().waitFor(WAIT);
    await page.getByTestId('editor-text').fill(
      JSON.stringify({
        ...WEEKLY,
        trigger: { ...WEEKLY.trigger, schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'Mars/Base' } },
      }),
    );
    const refused = 'schedule refused — VALIDATION_FAILED (400): timezone "Mars/Base" is not an exact IANA TZID';
    await page.getByTestId('preview').filter({ hasText: refused }).waitFor(WAIT);
    await page.getByTestId('editor-text').fill('{ "automationId": ');
    await page.getByTestId('editor-problem').filter({ hasText: 'not JSON' }).waitFor(WAIT);

    await page.getByTestId('editor-text').fill(JSON.stringify(WEEKLY, null, 2));
    await page.getByTestId('preview').filter({ hasText: 'next 5 runs' }).waitFor(WAIT);
    const slots = await page.getByTestId('preview-slot').evaluateAll((li) => li.map((n) => n.getAttribute('data-at')));
    const schedule = new Schedule('FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=8', 'Europe/Berlin');
    const expected: string[] = [];
    for (let after = world.clock.now(); expected.length < 5;) {
      after = schedule.nextAfter(after)!;
      expected.push(after.toISOString());
    }
    expect(slots).toEqual(expected);
    // Each slot in the definition's zone (CET, 08:00) and in the viewer's.
    expect(await page.getByTestId('preview-slot').first().textContent()).toMatch(
      /^2026-03-05 08:00:00 GMT\+1 · yours: /,
    );
    expect(await get('weekly-report')).toBeUndefined();

    await page.getByTestId('editor-save').click();
    await editorResult(page, 'created weekly-report: revision 1 (draft) → revision 2 (paused)');
    expect(await get('weekly-report')).toMatchObject({ lifecycleState: 'paused', currentRevision: 2 });
    await page.locator('[data-testid="editor"][data-mode="revise"]').waitFor(WAIT);

    await page.getByTestId('new-definition').click();
    await page.getByTestId('editor-text').fill(JSON.stringify(WEEKLY));
    await page.getByTestId('editor-save').click();
    await editorResult(page, 'create weekly-report refused — REVISION_CONFLICT (409)');
    expect(await page.getByTestId('editor-result').getAttribute('data-kind')).toBe('error');
  }, 60_000);

  test('revise: the difference from the current revision and the next revision number, then the saved revision', async () => {
    await page.getByTestId('edit-weekly-report').click();
    await page.getByTestId('editor-heading').filter({ hasText: 'revision 2' }).waitFor(WAIT);
    await page.getByTestId('diff').filter({ hasText: 'no change yet' }).waitFor(WAIT);
    const edited = {
      ...WEEKLY,
      action: { ...WEEKLY.action, prompt: 'Write the weekly report, with charts.' },
      trigger: { ...WEEKLY.trigger, schedule: { rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=16', timezone: 'Europe/Berlin' } },
    };
    await page.getByTestId('editor-text').fill(JSON.stringify(edited, null, 2));
    await page.locator('[data-testid="diff"] li').nth(1).waitFor(WAIT);
    expect(await page.getByTestId('next-revision').textContent()).toBe('revision 2 → 3');
    expect(await page.locator('[data-testid="diff"] li').evaluateAll((li) => li.map((n) => n.textContent))).toEqual([
      'action.prompt: "Write the weekly report." → "Write the weekly report, with charts."',
      'trigger.schedule.rrule: "FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=8" → "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16"',
    ]);
    await page.locator('[data-testid="preview-slot"][data-at="2026-03-06T15:00:00.000Z"]').waitFor(WAIT);

    await page.getByTestId('editor-save').click();
    await editorResult(page, 'saved weekly-report as revision 3 (paused)');
    const saved = await get('weekly-report');
    expect(saved).toMatchObject({ lifecycleState: 'paused', currentRevision: 3 });
    expect(saved!.definition).toMatchObject({ action: { prompt: 'Write the weekly report, with charts.' } });
    await page.getByTestId('editor-heading').filter({ hasText: 'revision 3' }).waitFor(WAIT);
    // Its chart: created, made ready, then revised in place (paused → paused, no edge of the machine).
    await page.getByTestId('editor-heading').getByTestId('chart-definition-weekly-report').click();
    const path = page.locator('[data-testid="entity-chart"][data-entity="definition"] [data-testid="path-step"]');
    await path.nth(2).waitFor(WAIT);
    expect(await path.evaluateAll((rows) => rows.map((r) => `${r.dataset.from}→${r.dataset.to}`))).toEqual([
      'none→draft',
      'draft→paused',
      'paused→paused',
    ]);

    const shot = join(world.dir, 'console-definition-editor.png');
    await page
      .getByTestId('editor-text')
      .fill(JSON.stringify({ ...edited, display: { name: 'Weekly report (Fridays)' } }, null, 2));
    await page.locator('[data-testid="diff"] li[data-path="display.name"]').waitFor(WAIT);
    await page.getByTestId('editor-text').evaluate((area) => area.scrollTo(0, 0));
    await page.locator('#editor-section').screenshot({ path: shot });
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-definition-editor.png'));
  }, 60_000);

  test('a revision committed elsewhere meanwhile: the save is refused REVISION_CONFLICT and nothing changes', async () => {
    const elsewhere = definitionBody('weekly-report', { revision: 4, lifecycleState: 'paused' });
    const revised = await world.engine.commands.handle(
      command('definition.revise.v1', { definition: elsewhere }, { expectedRevision: 3 }),
    );
    expect(revised.outcome).toBe('committed');
    await page.getByTestId('editor-result').filter({ hasText: 'changed elsewhere: now revision 4' }).waitFor(WAIT);
    await page.getByTestId('editor-save').click();
    await editorResult(page, 'save weekly-report refused — REVISION_CONFLICT (409)');
    expect(await page.getByTestId('editor-result').textContent()).toContain('current revision 4');
    expect(await get('weekly-report')).toMatchObject({ currentRevision: 4 });
  }, 60_000);

  test('lifecycle from the machine: activate, disable, re-enable, then tombstone once the id is typed', async () => {
    await page.getByTestId('edit-weekly-report').click();
    const state = (s: string) => page.locator(`[data-testid="editor-heading"] [data-state="${s}"]`).waitFor(WAIT);
    await state('paused');
    // paused → active, disabled, tombstoned: the definition machine's command_handler edges from paused.
    const offered = async () =>
      page.locator('[data-testid="lifecycle-actions"] button').evaluateAll((b) => b.map((n) => n.textContent));
    expect(await offered()).toEqual(['activate', 'disable', 'tombstone']);
    await page.getByTestId('lifecycle-activate').click();
    await state('active');
    expect(await offered()).toEqual(['pause', 'disable', 'tombstone']);
    await page.getByTestId('lifecycle-disable').click();
    await state('disabled');
    expect(await offered()).toEqual(['re-enable', 'tombstone']);
    await page.getByTestId('lifecycle-re-enable').click();
    await state('paused');
    expect(await get('weekly-report')).toMatchObject({ lifecycleState: 'paused', currentRevision: 7 });

    await page.getByTestId('tombstone-confirm').fill('weekly');
    await page.getByTestId('lifecycle-tombstone').click();
    await page
      .getByTestId('message')
      .filter({ hasText: 'type the automation id to confirm; nothing sent' })
      .waitFor(WAIT);
    expect(await get('weekly-report')).toMatchObject({ lifecycleState: 'paused' });
    await page.getByTestId('tombstone-confirm').fill('weekly-report');
    await page.getByTestId('lifecycle-tombstone').click();
    await page.getByTestId('message').filter({ hasText: 'tombstone weekly-report: committed' }).waitFor(WAIT);
    await page.getByTestId('definition-weekly-report').filter({ hasText: 'tombstoned' }).waitFor(WAIT);
    expect(await page.getByTestId('edit-weekly-report').count()).toBe(0);
  }, 60_000);

  test('without the token the editor sends nothing the daemon accepts: AUTHORITY_REQUIRED, nothing created', async () => {
    const anonymous = await browser.context.newPage();
    try {
      await anonymous.goto(`${world.url}/`);
      await anonymous.getByTestId('new-definition').click();
      await anonymous.getByTestId('editor-text').fill(JSON.stringify({ ...WEEKLY, automationId: 'sneaky' }));
      await anonymous.getByTestId('editor-save').click();
      await editorResult(anonymous, 'create sneaky refused — AUTHORITY_REQUIRED (403)');
      expect(await get('sneaky')).toBeUndefined();
    } finally {
      await anonymous.close();
    }
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
