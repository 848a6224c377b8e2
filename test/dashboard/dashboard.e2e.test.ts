import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { dashboardRoutes } from '../../src/daemon/dashboard-routes.js';
import type { DaemonPlugin } from '../../src/daemon/index.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { command } from '../support/commands.js';
import { readUpstreamJson, upstreamAvailable } from '../support/upstream.js';
import { browserMissing, inCi, launchBrowser, type TestBrowser } from './browser.js';
import { dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

/**
 * A doctor report as upstream's diagnostics.doctor.v1 schema shapes it, served the way the observability
 * plugin serves the real one: what the page must render, independently of which findings a store produces.
 */
const DOCTOR_REPORT = {
  doctorVersion: 1,
  generatedAt: '2026-03-02T08:00:00.000Z',
  ok: false,
  counts: { due: 0, eligible: 0, claimed: 0, running: 0, recoveryRequired: 1, quarantined: 0 },
  findings: [
    {
      code: 'occurrences.recovery-required',
      severity: 'error',
      subjectIds: ['occ-1'],
      observed: '1 occurrence waits for an operator recovery',
      safeNextSteps: ['coven-automata occurrence occ-1'],
    },
    { code: 'runs.cancelled', severity: 'info', subjectIds: ['run-2'], observed: '1 run cancelled', safeNextSteps: [] },
  ],
  safeNextSteps: ['coven-automata occurrence occ-1'],
};
const doctorFixture: DaemonPlugin = async (app) => {
  app.get('/api/v1/doctor', async () => DOCTOR_REPORT);
};

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 15_000 };

if (browserMissing !== undefined && !inCi) console.log(`dashboard browser test skipped: ${browserMissing}`);

test.runIf(browserMissing !== undefined && inCi)('CI has the browser the dashboard test needs', () => {
  throw new Error(`${browserMissing} (.ci/run installs it)`);
});

/** The occurrence id of the first row in the shown view with this state, once there is one. */
async function occurrenceIn(page: Page, state: string, except?: string): Promise<string> {
  const rows = page.locator(`[data-testid^="occurrence-"][data-state="${state}"]`);
  const row = except === undefined ? rows.first() : rows.filter({ hasNot: page.getByTestId(`open-${except}`) }).first();
  await row.waitFor(WAIT);
  return (await row.getAttribute('data-testid'))!.slice('occurrence-'.length);
}

const message = (page: Page, text: string) => page.getByTestId('message').filter({ hasText: text }).waitFor(WAIT);

describe.skipIf(browserMissing !== undefined)('the dashboard in a real browser (Debian chromium)', () => {
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
    // The browser logs every 4xx as a console error; the expected ones (the doctor's 404 without the
    // observability plugin, a refusal's 409) are answers, so only a server failure counts.
    page.on('console', (line) => {
      if (line.type() === 'error' && !line.text().startsWith('Failed to load resource')) pageErrors.push(line.text());
    });
    page.on('response', (response) => {
      if (response.status() >= 500) pageErrors.push(`${response.status()} ${response.url()}`);
    });
    page.on('request', (request) => requests.push(request.url()));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('run-now → the run appears live → receipt verified; a typed refusal reads as a sentence', async () => {
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    expect(page.url(), 'the token leaves the address bar').not.toContain('token=');
    await page.getByTestId('live').filter({ hasText: 'live' }).waitFor(WAIT);
    const definition = page.getByTestId('definition-daily-notes');
    await definition.filter({ hasText: 'active' }).waitFor(WAIT);
    expect(await definition.getByTestId('revision').textContent()).toBe('3');
    expect(await definition.getByTestId('next-run').getAttribute('data-testid')).toBe('next-run');
    await page.getByTestId('doctor-run').click();
    await page.getByTestId('doctor-unavailable').waitFor(WAIT);

    await page.getByTestId('run-now-daily-notes').click();
    await message(page, 'run now daily-notes: committed');
    // Live: the run's transition arrives over the changefeed stream, and the running view shows it.
    await page.locator('#feed li[data-kind="run.transitioned"]').first().waitFor(WAIT);
    await page.getByTestId('view-running').click();
    const occurrenceId = await occurrenceIn(page, 'running');
    await page.getByTestId(`open-${occurrenceId}`).click();
    await page.getByTestId('detail').filter({ hasText: 'no receipt yet' }).waitFor(WAIT);

    await page.getByTestId('run-now-daily-notes').click();
    await message(page, 'run now daily-notes refused — OVERLAP_FORBIDDEN (409): automation daily-notes has live work');

    // The engine's next pass settles the session; the page follows without a reload.
    await world.pass(2);
    const detail = page.locator('[data-testid="detail"][data-state="succeeded"]');
    await detail.locator(`[data-verified="true"]`).waitFor(WAIT);
    expect(await detail.locator('[data-verified]').count()).toBe(1);
    await definition.getByTestId('last-result').filter({ hasText: 'succeeded' }).waitFor(WAIT);
  }, 60_000);

  test('a session lost after its side effect: recovery_required, recovered from the page, attempt 2 verified', async () => {
    world.runtime.enqueue('lost-after-side-effect');
    await page.getByTestId('view-running').click();
    await page.getByTestId('run-now-daily-notes').click();
    const occurrenceId = await occurrenceIn(page, 'running');
    // A read of the occurrence made while it still ran is held back until after the recover form is drawn and
    // filled in: arriving late, overtaken, it must not take the form away from what the operator typed.
    const isDetailRead = (request: Request) => (request.postData() ?? '').includes('"occurrence.get.v1"');
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let heldRead: Request | undefined;
    await page.route('**/api/v1/actions', async (route) => {
      if (heldRead === undefined && isDetailRead(route.request())) {
        heldRead = route.request();
        await released;
      }
      await route.continue();
    });
    await page.getByTestId(`open-${occurrenceId}`).click();
    await world.pass(2);

    await page.getByTestId('view-recovery_required').click();
    expect(await occurrenceIn(page, 'recovery_required')).toBe(occurrenceId);
    await page.getByTestId(`recover-open-${occurrenceId}`).click();
    await page.locator('[data-testid="detail"][data-state="recovery_required"]').waitFor(WAIT);
    await page.getByTestId('detail').filter({ hasText: 'recovery evidence: runtime_lost' }).waitFor(WAIT);
    await page.getByTestId('recover-determination').selectOption('retry_with_new_attempt');
    await page.getByTestId('recover-statement').fill('Checked the notes folder: nothing was written.');
    expect(heldRead).toBeDefined();
    const overtaken = page.waitForEvent('requestfinished', (request) => request === heldRead);
    release();
    await overtaken;
    await page.unroute('**/api/v1/actions');
    const redrawn = page.waitForEvent('requestfinished', isDetailRead);
    await page.getByTestId(`recover-open-${occurrenceId}`).click();
    await redrawn;
    // One more round trip through the page, so the redraw's continuation has run before looking.
    await page.evaluate(async () => void (await fetch('/healthz')).status);
    expect(await page.getByTestId('recover-statement').inputValue()).toBe(
      'Checked the notes folder: nothing was written.',
    );
    await page.getByTestId('recover-submit').click();
    await message(page, `recover ${occurrenceId}: committed`);

    await world.pass(2);
    const detail = page.locator('[data-testid="detail"][data-state="succeeded"]');
    await detail.locator('[data-testid$="-2"][data-verified="true"]').waitFor(WAIT);
    await detail.filter({ hasText: 'operator_recovery after #1 ambiguous' }).waitFor(WAIT);

    const shot = join(world.dir, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1') copyFileSync(shot, join(packageRoot(), 'docs', 'dashboard.png'));
  }, 60_000);

  test('the page asked only the daemon for anything, and raised no error', () => {
    expect(requests.filter((url) => !url.startsWith(`${world.url}/`))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  test.runIf(upstreamAvailable)('the doctor fixture is a valid diagnostics.doctor.v1 report (upstream schema)', () => {
    const schema = readUpstreamJson<object>('conformance/schemas/diagnostics.doctor.v1.schema.json');
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate(DOCTOR_REPORT), JSON.stringify(validate.errors)).toBe(true);
  });

  test('doctor findings: each finding with its severity, subjects, observation and safe next steps', async () => {
    const doctorWorld = await dashboardWorld([dashboardRoutes(), doctorFixture]);
    const doctorPage = await browser.context.newPage();
    try {
      await doctorPage.goto(`${doctorWorld.url}/?token=${doctorWorld.daemon.token}`);
      await doctorPage.getByTestId('doctor-run').click();
      await doctorPage.locator('[data-testid="doctor-ok"][data-ok="false"]').waitFor(WAIT);
      const finding = doctorPage.getByTestId('finding-occurrences.recovery-required');
      await finding.filter({ hasText: 'error occurrences.recovery-required' }).waitFor(WAIT);
      expect(await finding.textContent()).toContain('→ coven-automata occurrence occ-1');
      await doctorPage.getByTestId('finding-runs.cancelled').filter({ hasText: 'info' }).waitFor(WAIT);
    } finally {
      await doctorPage.close();
      await doctorWorld.close();
    }
  }, 60_000);

  test('a failed run: the failure, its output tail and the hold with its commands; the output view loads it', async () => {
    const runtime = new FunctionRuntime('coven-code', async () => ({
      outcome: 'failed',
      output: 'connecting to the database\nboom: database unreachable\n',
    }));
    const failing = await dashboardWorld([dashboardRoutes()], runtime);
    const failedPage = await browser.context.newPage();
    try {
      await failedPage.goto(`${failing.url}/?token=${failing.daemon.token}`);
      await failedPage.getByTestId('run-now-daily-notes').click();
      await message(failedPage, 'run now daily-notes: committed');
      await runtime.drain();
      await failing.pass(1);
      const definition = failedPage.getByTestId('definition-daily-notes');
      await definition.locator('[data-testid="last-result"] [data-held="true"]').waitFor(WAIT);
      expect(await definition.getByTestId('last-result').textContent()).toMatch(
        /failed, held for retry until .*\(runtime_error, exit 1\)/,
      );
      await failedPage.getByTestId('view-running').click();
      const occurrenceId = await occurrenceIn(failedPage, 'running');
      await failedPage.getByTestId(`open-${occurrenceId}`).click();
      const panel = failedPage.locator('[data-testid^="failure-run-"][data-held="true"]');
      await panel.waitFor(WAIT);
      const runId = (await panel.getAttribute('data-testid'))!.slice('failure-'.length);
      expect(await panel.locator('strong').first().textContent()).toBe('attempt 1 failed: runtime_error, exit 1');
      expect(await panel.getByTestId('failure-output').textContent()).toBe(
        'connecting to the database\nboom: database unreachable\n',
      );
      const hold = await panel.getByTestId('failure-hold').textContent();
      expect(hold).toContain(`coven-automata retry ${runId}`);
      expect(hold).toContain(`coven-automata cancel ${occurrenceId}`);
      await panel.getByTestId(`retry-${runId}`).waitFor(WAIT);
      await panel.getByTestId(`show-output-${runId}`).click();
      const logs = failedPage.getByTestId(`logs-${runId}`);
      await logs.waitFor(WAIT);
      expect(await logs.textContent()).toBe('connecting to the database\nboom: database unreachable\n');
    } finally {
      await failedPage.close();
      await failing.close();
    }
  }, 60_000);

  test('a lifecycle button on a definition already in its target state reads as done; the command API refuses', async () => {
    const lifecycle = await dashboardWorld();
    const stale = await browser.context.newPage();
    const get = async () =>
      (await lifecycle.engine.commands.handle(command('definition.get.v1', { automationId: 'daily-notes' }))).result!;
    const elsewhere = (name: string, expectedRevision: number) =>
      lifecycle.engine.commands.handle(command(name, { automationId: 'daily-notes' }, { expectedRevision }));
    try {
      // No live feed: the page keeps showing what it last read, as a tab left open does.
      await stale.route('**/api/v1/events**', (route) => route.abort());
      await stale.goto(`${lifecycle.url}/?token=${lifecycle.daemon.token}`);
      await stale.getByTestId('pause-daily-notes').waitFor(WAIT);
      expect((await elsewhere('definition.pause.v1', 3)).outcome).toBe('committed');
      await stale.getByTestId('pause-daily-notes').click();
      await message(stale, 'daily-notes: already paused (revision 4); nothing committed');
      expect(await stale.getByTestId('message').getAttribute('class')).toBe('ok');

      await stale.getByTestId('activate-daily-notes').waitFor(WAIT);
      expect((await elsewhere('definition.activate.v1', 4)).outcome).toBe('committed');
      await stale.getByTestId('activate-daily-notes').click();
      await message(stale, 'daily-notes: already active (revision 5); nothing committed');
      expect(await stale.getByTestId('message').getAttribute('class')).toBe('ok');
      expect(await get()).toMatchObject({ lifecycleState: 'active', currentRevision: 5 });

      // A move the definition can make still goes through.
      await stale.getByTestId('pause-daily-notes').click();
      await message(stale, 'pause daily-notes: committed (revision 6)');
      expect(await get()).toMatchObject({ lifecycleState: 'paused', currentRevision: 6 });

      // The daemon's command API keeps the contract's refusal for the same request.
      const answered = await fetch(`${lifecycle.url}/api/v1/actions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${lifecycle.daemon.token}` },
        body: JSON.stringify(command('definition.pause.v1', { automationId: 'daily-notes' }, { expectedRevision: 6 })),
      });
      expect(answered.status).toBe(422);
      expect(await answered.json()).toMatchObject({ outcome: 'rejected', error: { code: 'ILLEGAL_TRANSITION' } });
      expect(await get()).toMatchObject({ lifecycleState: 'paused', currentRevision: 6 });
    } finally {
      await stale.close();
      await lifecycle.close();
    }
  }, 60_000);

  test('without the token the page is read-only: reads show, no action; the API refuses one AUTHORITY_REQUIRED', async () => {
    const anonymous = await browser.context.newPage();
    await anonymous.goto(`${world.url}/`);
    await anonymous.getByTestId('authority').filter({ hasText: 'read-only' }).waitFor(WAIT);
    await anonymous.getByTestId('live').filter({ hasText: 'needs the token' }).waitFor(WAIT);
    await anonymous.getByTestId('definition-daily-notes').filter({ hasText: 'active' }).waitFor(WAIT);
    expect(await anonymous.getByTestId('pause-daily-notes').count()).toBe(0);
    const refused = await anonymous.evaluate(async () => {
      const response = await fetch('/api/v1/actions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          schemaVersion: 'coven.automations.v1',
          command: 'definition.pause.v1',
          adoptionKey: 'dashboard-test-anonymous-pause',
          origin: { principal: { principalId: 'operator:dashboard' }, channel: 'http' },
          intent: { statement: 'pause without the token' },
          payload: { automationId: 'daily-notes' },
        }),
      });
      return { status: response.status, body: (await response.json()) as { error?: { code?: string } } };
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error?.code).toBe('AUTHORITY_REQUIRED');
    const state = await world.engine.commands.handle({
      schemaVersion: 'coven.automations.v1',
      command: 'definition.get.v1',
      adoptionKey: 'dashboard-test-get',
      origin: { principal: { principalId: 'principal:test' }, channel: 'sdk' },
      intent: { statement: 'check' },
      payload: { automationId: 'daily-notes' },
    });
    expect(state.result).toMatchObject({ lifecycleState: 'active', revision: 3 });
    await anonymous.close();
  }, 60_000);
});
