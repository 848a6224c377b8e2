import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { eventually } from '../support/eventually.js';
import { browserMissing, launchBrowser, type TestBrowser } from './browser.js';
import { addActiveDefinition, dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';
import { LIMITS_EXTENSION } from '../../src/domain/flow-limits.js';
import type { Engine } from '../../src/engine/engine.js';
import { command } from '../support/commands.js';

async function ok(engine: Engine, envelope: unknown): Promise<void> {
  const response = await engine.commands.handle(envelope);
  if (response.outcome === 'rejected') throw new Error(JSON.stringify(response.error));
}

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 15_000 };

if (browserMissing !== undefined) console.log(`console fixes browser test skipped: ${browserMissing}`);

/** The buttons that change something; a read-only page shows none of them. */
const ACTIONS =
  '[data-testid^="pause-"], [data-testid^="activate-"], [data-testid^="run-now-"], [data-testid^="cancel-"], ' +
  '[data-testid^="recover-"], [data-testid^="retry-"], button[data-testid*="-bulk-"], [data-testid*="-retry-"], ' +
  '[data-testid*="-cancel-"], [data-testid^="select-"]';

describe.skipIf(browserMissing !== undefined)('the console as issue 41 found it broken (Debian chromium)', () => {
  let world: DashboardWorld;
  let browser: TestBrowser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ensureDashboardBuilt();
    world = await dashboardWorld();
    // The viewer sits in Berlin; the definition's schedule is in UTC.
    browser = await launchBrowser({ timezoneId: 'Europe/Berlin', viewport: { width: 800, height: 900 } });
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('at 800 px wide nothing is clipped and "run now" is on screen', async () => {
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    const runNow = page.getByTestId('run-now-daily-notes');
    await runNow.waitFor(WAIT);
    // Live refreshes re-draw the row: the box is read once the button stands still on the page.
    const box = await eventually(async () => (await runNow.boundingBox()) ?? undefined);
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(800);
    // Run in the page (a string: this file is compiled without the DOM's types).
    const overflow = await page.evaluate<{ page: number; sections: string[] }>(`({
      page: document.documentElement.scrollWidth,
      sections: [...document.querySelectorAll('section')]
        .filter((s) => s.scrollWidth > s.clientWidth + 1)
        .map((s) => s.id + ' ' + s.scrollWidth + '>' + s.clientWidth),
    })`);
    expect(overflow.page).toBeLessThanOrEqual(800);
    expect(overflow.sections).toEqual([]);
    const shot = join(world.dir, 'console-800px.png');
    await page.screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-800px.png'));
  }, 60_000);

  test("every time shows its zone: the definition's (UTC) and the viewer's (Europe/Berlin)", async () => {
    const next = page.getByTestId('definition-daily-notes').getByTestId('next-run');
    await next.filter({ hasText: 'UTC' }).waitFor(WAIT);
    // The slot is 09:00 UTC on 2 March 2026: 10:00 in Berlin (CET).
    expect(await next.textContent()).toMatch(/09:00 UTC.*10:00 Europe\/Berlin/);
  }, 60_000);

  test('a cancel that is pending reads as pending, not as a red refusal', async () => {
    await page.getByTestId('run-now-daily-notes').click();
    await page.getByTestId('view-running').click();
    const row = page.locator('[data-testid^="occurrence-"][data-state="running"]').first();
    await row.waitFor(WAIT);
    const occurrenceId = (await row.getAttribute('data-testid'))!.slice('occurrence-'.length);
    await page.getByTestId(`cancel-${occurrenceId}`).click();
    const message = page.getByTestId('message');
    await message.filter({ hasText: `cancel ${occurrenceId}: cancellation requested` }).waitFor(WAIT);
    expect(await message.textContent()).toContain('pending until the runtime acknowledges');
    expect(await message.textContent()).not.toContain('refused');
    expect(await message.getAttribute('class')).toBe('pending');
  }, 60_000);

  test('the changefeed numbers each entry once and shows each transition once', async () => {
    const item = page.locator('#feed li[data-kind="occurrence.transitioned"]').first();
    await item.waitFor(WAIT);
    const counts = await page.evaluate<Array<{ numbers: number; arrows: number; transition: boolean }>>(
      `[...document.querySelectorAll('#feed li')].map((li) => {
        const text = li.textContent ?? '';
        const marker = getComputedStyle(li).listStyleType === 'none' ? 0 : 1;
        return {
          numbers: marker + (text.match(/#\\d+/g) ?? []).length,
          arrows: (text.match(/→|->/g) ?? []).length,
          transition: li.getAttribute('data-kind').endsWith('.transitioned'),
        };
      })`,
    );
    expect(counts.length).toBeGreaterThan(2);
    for (const c of counts) {
      expect(c.numbers).toBe(1);
      // A transition shows its move once; another event's summary may name one move, never two.
      if (c.transition) expect(c.arrows).toBe(1);
      else expect(c.arrows).toBeLessThanOrEqual(1);
    }
  }, 60_000);

  test('without the token the page is read-only and shows no action at all', async () => {
    const anonymous = await browser.context.newPage();
    try {
      await anonymous.goto(`${world.url}/`);
      await anonymous.getByTestId('authority').filter({ hasText: 'read-only' }).waitFor(WAIT);
      await anonymous.getByTestId('definition-daily-notes').waitFor(WAIT);
      await anonymous.locator('tr[data-testid^="occurrence-"]').first().waitFor(WAIT);
      expect(await anonymous.locator(ACTIONS).count()).toBe(0);
      expect(await anonymous.locator('[data-testid^="open-"]').count()).toBeGreaterThan(0);
    } finally {
      await anonymous.close();
    }
  }, 60_000);

  test('a wrong token says so and drops to read-only: no green badge, no endless reconnecting', async () => {
    const wrong = await browser.context.newPage();
    const streams: string[] = [];
    wrong.on('request', (request) => {
      if (request.url().includes('/api/v1/events')) streams.push(request.url());
    });
    try {
      await wrong.goto(`${world.url}/?token=not-the-token`);
      const authority = wrong.getByTestId('authority');
      await authority.filter({ hasText: 'token refused' }).waitFor(WAIT);
      expect(await authority.textContent()).toContain('read-only');
      expect(await authority.getAttribute('class')).not.toContain('ok');
      await wrong.getByTestId('live').filter({ hasText: 'needs the token' }).waitFor(WAIT);
      await wrong.getByTestId('definition-daily-notes').waitFor(WAIT);
      expect(await wrong.locator(ACTIONS).count()).toBe(0);
      expect(await wrong.getByTestId('live').textContent()).not.toContain('reconnecting');
      expect(streams).toEqual([]);
    } finally {
      await wrong.close();
    }
  }, 60_000);

  test('a token the daemon stops accepting under an open page: the stream stops and the page goes read-only', async () => {
    const open = await browser.context.newPage();
    let refused = false;
    let streams = 0;
    try {
      // The stream is refused throughout; the session read says the token holds until `refused` is set, as a
      // daemon restarted with a new token would from then on.
      await open.route('**/api/v1/events**', (route) => {
        streams += 1;
        return route.fulfill({ status: 403, contentType: 'application/json', body: '{}' });
      });
      await open.route('**/api/v1/console/session', (route) =>
        refused
          ? route.fulfill({ contentType: 'application/json', body: '{"authority":"read-only","tokenPresented":true}' })
          : route.continue(),
      );
      await open.clock.install();
      await open.goto(`${world.url}/?token=${world.daemon.token}`);
      await open.getByTestId('authority').filter({ hasText: 'operator (token)' }).waitFor(WAIT);
      await open.getByTestId('live').filter({ hasText: 'reconnecting' }).waitFor(WAIT);
      await open.getByTestId('pause-daily-notes').waitFor(WAIT);
      refused = true;
      await open.getByTestId('authority').filter({ hasText: 'token refused' }).waitFor(WAIT);
      await open.getByTestId('live').filter({ hasText: 'token refused' }).waitFor(WAIT);
      await open.getByTestId('pause-daily-notes').waitFor({ state: 'detached', ...WAIT });
      const after = streams;
      // Fast-forward the page's timers past any reconnect it could have scheduled (one a second): none fires.
      await open.clock.runFor(5_000);
      await open.getByTestId('live').filter({ hasText: 'token refused' }).waitFor(WAIT);
      expect(streams).toBe(after);
    } finally {
      await open.close();
    }
  }, 60_000);

  test('a definition row shows its schedule as written: the trigger rule, or the extension cron expression', async () => {
    await addActiveDefinition(world.engine, 'quarter-hours', {
      schedule: { cron: '*/15 * * * *', timezone: 'Europe/Berlin' },
    });
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    const row = page.getByTestId('definition-quarter-hours');
    await row.getByTestId('schedule').waitFor(WAIT);
    expect(await row.getByTestId('schedule').textContent()).toBe('cron */15 * * * * · Europe/Berlin');
    expect(await page.getByTestId('definition-daily-notes').getByTestId('schedule').textContent()).toBe(
      'FREQ=DAILY;BYHOUR=9 · utc',
    );
    // The clock stands at 08:00 UTC: the next quarter hour is 08:15 UTC, 09:15 in Berlin.
    await row.getByTestId('next-run').filter({ hasText: '09:15' }).waitFor(WAIT);
  }, 60_000);

  test('the limits panel shows each gate: a full tag cap and the work waiting at it', async () => {
    for (const id of ['report-a', 'report-b'])
      await addActiveDefinition(world.engine, id, { extensions: { [LIMITS_EXTENSION]: { tags: ['reports'] } } });
    await ok(
      world.engine,
      command('x-coven-automata.limits.set.v1', { limits: { tags: { reports: { inFlight: 1 } } } }),
    );
    await world.pass(61);
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    const gate = page.getByTestId('gate-tag:reports');
    await gate.filter({ hasText: '1 / 1' }).waitFor(WAIT);
    expect(await gate.getByTestId('gate-waiting').textContent()).toBe('1');
    expect(await gate.textContent()).toMatch(/full$/);
    // Each definition row names the policies it adds to the contract's.
    const policies = page.getByTestId('definition-report-a').getByTestId('policies');
    await policies.waitFor(WAIT);
    expect(await policies.textContent()).toBe('tags reports');
  }, 60_000);

  test('the page raised no error', () => {
    expect(pageErrors).toEqual([]);
  });
});
