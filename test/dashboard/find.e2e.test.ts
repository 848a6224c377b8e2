import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { KINDS, runContext, stateOf, type OccurrenceRecord, type RunRecord } from '../../src/domain/records.js';
import { browserMissing, launchBrowser, type TestBrowser } from './browser.js';
import { addActiveDefinition, dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

/** Each wait on the page is a condition with this deadline, never a sleep. */
const WAIT = { timeout: 20_000 };
/** The store under load: this many automations, each due every hour, run through this many hourly passes. */
const AUTOMATIONS = 300;
const PASSES = 10;
const HOURLY = `FREQ=DAILY;BYHOUR=${Array.from({ length: 24 }, (_, h) => h).join(',')}`;
const ROW_KEYS = ['occurrences', 'runs', 'definitions', 'liveOccurrences'];

if (browserMissing !== undefined) console.log(`find browser test skipped: ${browserMissing}`);

/** How many entity rows one answer carries (its lists, at the top or under `result`). */
function rowsIn(body: unknown): number {
  if (body === null || typeof body !== 'object') return 0;
  const record = body as Record<string, unknown>;
  let rows = 0;
  for (const key of ROW_KEYS) if (Array.isArray(record[key])) rows += (record[key] as unknown[]).length;
  if (record.health !== undefined) rows += rowsIn(record.health);
  return rows + (record.result === undefined ? 0 : rowsIn(record.result));
}

const id = (n: number) => `fleet-${String(n).padStart(3, '0')}`;

/** The kinds that grow with the work done: no console read may list them (a list of one is a full-table read). */
const GROWING = new Set<string>([KINDS.occurrence, KINDS.run, KINDS.attempt]);
/** Each list or versions call on a growing kind through the daemon's store after seeding, as `kind method`. */
const wholeKindReads: string[] = [];

/** Has every read of the world's store (the daemon's and the engine's) note a list of a growing kind. */
function watchWholeKindReads(world: DashboardWorld): void {
  const read = world.store.read.bind(world.store);
  world.store.read = (body) =>
    read((reader) =>
      body(
        new Proxy(reader, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver) as unknown;
            if ((name !== 'list' && name !== 'versions') || typeof value !== 'function') return value;
            return (kind: string, ...rest: unknown[]) => {
              if (GROWING.has(kind)) wholeKindReads.push(`${kind} ${String(name)}`);
              return (value as (...args: unknown[]) => unknown).call(target, kind, ...rest);
            };
          },
        }),
      ),
    );
}

describe.skipIf(browserMissing !== undefined)('finding things in a loaded store (Debian chromium)', () => {
  let world: DashboardWorld;
  let browser: TestBrowser;
  let page: Page;
  /** Rows per answer the page received, by request path. */
  const answers: Array<{ path: string; rows: number }> = [];
  /** Answers still being read: the figures wait for them. */
  const counting: Array<Promise<void>> = [];
  const pageErrors: string[] = [];
  let occurrences: OccurrenceRecord[] = [];
  let runs: RunRecord[] = [];

  const count = async (response: Response) => {
    const path = new URL(response.url()).pathname;
    if (!path.startsWith('/api/') || path === '/api/v1/events') return;
    const text = await response.text().catch(() => '');
    answers.push({ path, rows: text.startsWith('{') ? rowsIn(JSON.parse(text)) : 0 });
  };

  beforeAll(async () => {
    ensureDashboardBuilt();
    world = await dashboardWorld();
    const started = Date.now();
    for (let n = 0; n < AUTOMATIONS; n++)
      await addActiveDefinition(world.engine, id(n), {
        rrule: HOURLY,
        timezone: n % 3 === 0 ? 'Europe/Berlin' : 'utc',
        tags: n % 2 === 0 ? ['fleet', 'even'] : ['fleet'],
        // Longer than a pass: a session settles before its deadline, and a failed one stays held over a pass.
        perRunMinutes: 90,
      });
    // Some sessions fail: those runs are held for an operator retry.
    for (let pass = 0; pass < PASSES; pass++) {
      world.runtime.enqueue('fail', 'fail', 'fail');
      await world.pass(60);
    }
    await world.store.read(async (reader) => {
      occurrences = (await reader.list(KINDS.occurrence)) as OccurrenceRecord[];
      runs = (await reader.list(KINDS.run)) as RunRecord[];
    });
    console.log(
      `seeded ${AUTOMATIONS + 1} definitions, ${occurrences.length} occurrences, ${runs.length} runs ` +
        `in ${Date.now() - started} ms`,
    );
    watchWholeKindReads(world);
    browser = await launchBrowser({ timezoneId: 'Europe/Berlin' });
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('response', (response) => counting.push(count(response)));
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  test('the store holds hundreds of definitions and thousands of occurrences', () => {
    expect(occurrences.length).toBeGreaterThanOrEqual(AUTOMATIONS * PASSES);
    expect(runs.length).toBeGreaterThan(1000);
  });

  test('the console loads with bounded reads: no answer over 100 rows, a small part of the store in all', async () => {
    const started = Date.now();
    await page.goto(`${world.url}/?token=${world.daemon.token}`);
    await page.locator('[data-testid="definitions-table"] tbody tr').nth(19).waitFor(WAIT);
    await page.locator('[data-testid="find-occurrences"] tbody tr').nth(24).waitFor(WAIT);
    await page.locator('[data-testid="failures-table"] tbody tr').first().waitFor(WAIT);
    await page.locator('[data-testid="chart-counts"] canvas').first().waitFor(WAIT);
    await page.locator('[data-testid="occurrences-table"] tbody tr').first().waitFor(WAIT);
    const loaded = Date.now() - started;
    await Promise.all(counting);
    const rows = answers.reduce((n, a) => n + a.rows, 0);
    const largest = Math.max(...answers.map((a) => a.rows));
    console.log(
      `first load: ${answers.length} answers, ${rows} rows in all, largest ${largest}, ` +
        `store ${occurrences.length + runs.length + AUTOMATIONS + 1} rows; shown in ${loaded} ms`,
    );
    expect(largest).toBeLessThanOrEqual(100);
    expect(rows).toBeLessThan((occurrences.length + runs.length) / 10);
    expect(await page.locator('[data-testid="definitions-table"] tbody tr').count()).toBe(20);
    expect(await page.getByTestId('definitions-pager').textContent()).toContain(`of ${AUTOMATIONS + 1} matching`);
  }, 60_000);

  test("the occurrence views and the definitions page through their reads' cursors", async () => {
    const firstOf = (table: string) =>
      page.locator(`[data-testid="${table}"] tbody tr`).first().getAttribute('data-testid');
    for (const [table, pager] of [
      ['occurrences-table', 'occurrences'],
      ['definitions-table', 'definitions'],
    ] as const) {
      const first = await firstOf(table);
      await page.getByTestId(`${pager}-next`).click();
      await page.locator(`[data-testid="${pager}-pager"][data-page="2"]`).waitFor(WAIT);
      expect(await firstOf(table)).not.toBe(first);
      await page.getByTestId(`${pager}-previous`).click();
      await page.locator(`[data-testid="${pager}-pager"][data-page="1"]`).waitFor(WAIT);
      expect(await firstOf(table)).toBe(first);
    }
  }, 60_000);

  test('search by occurrence, by run, by automation and by state', async () => {
    const find = async (scope: string, q: string, state = '') => {
      await page.getByTestId('find-scope').selectOption(scope);
      await page.getByTestId('find-q').fill(q);
      await page.getByTestId('find-state').selectOption(state);
      await page.getByTestId('find-submit').click();
    };
    const target = occurrences[Math.floor(occurrences.length / 3)]!;
    await find('occurrences', target.id);
    await page.getByTestId(`found-${target.id}`).waitFor(WAIT);
    await page.getByTestId('find-pager').filter({ hasText: '1 shown of 1 matching' }).waitFor(WAIT);

    const run = runs[Math.floor((runs.length * 2) / 3)]!;
    await find('occurrences', run.id);
    await page.getByTestId(`found-${runContext(run).occurrenceId}`).waitFor(WAIT);
    await page.getByTestId('find-pager').filter({ hasText: '1 shown of 1 matching' }).waitFor(WAIT);

    const ofAutomation = runs.filter((r) => r.data.attributes.automationId === id(7)).length;
    await find('runs', id(7));
    await page
      .getByTestId('find-pager')
      .filter({ hasText: `of ${ofAutomation} matching` })
      .waitFor(WAIT);

    const held = runs.filter((r) => stateOf(r) === 'running').length;
    expect(held).toBeGreaterThan(0);
    await find('runs', '', 'held');
    const heldRows = page.locator('[data-testid="find-runs"] tbody tr[data-state="running"]');
    await heldRows.first().waitFor(WAIT);
    const pager = await page.getByTestId('find-pager').textContent();
    expect(Number(/of (\d+) matching/.exec(pager!)![1])).toBeLessThanOrEqual(held);
    expect(Number(/of (\d+) matching/.exec(pager!)![1])).toBeGreaterThan(0);
  }, 60_000);

  test('filters by state, tag and time range (entered in the viewer zone) match what the store holds', async () => {
    // 12:00–15:00 in Berlin is 11:00–14:00 UTC.
    const from = '2026-03-02T11:00:00.000Z';
    const to = '2026-03-02T14:00:00.000Z';
    const even = new Set(
      Array.from({ length: AUTOMATIONS }, (_, n) => n)
        .filter((n) => n % 2 === 0)
        .map(id),
    );
    const expected = occurrences.filter(
      (o) =>
        stateOf(o) === 'succeeded' &&
        even.has(o.data.attributes.automationId) &&
        o.data.attributes.scheduledFor >= from &&
        o.data.attributes.scheduledFor < to,
    );
    expect(expected.length).toBeGreaterThan(100);
    await page.getByTestId('find-scope').selectOption('occurrences');
    await page.getByTestId('find-q').fill('');
    await page.getByTestId('find-state').selectOption('succeeded');
    await page.getByTestId('find-tag').fill('even');
    await page.getByTestId('find-from').fill('2026-03-02T12:00');
    await page.getByTestId('find-to').fill('2026-03-02T15:00');
    await page.getByTestId('find-submit').click();
    const pager = page.getByTestId('find-pager');
    await pager.filter({ hasText: `25 shown of ${expected.length} matching` }).waitFor(WAIT);
    const states = [];
    for (const row of await page.locator('[data-testid="find-occurrences"] tbody tr').all())
      states.push(await row.getAttribute('data-state'));
    expect(new Set(states)).toEqual(new Set(['succeeded']));

    // Pagination walks the read's cursor: the next page is new rows, and previous comes back to the first.
    const first = await page.locator('[data-testid^="found-"]').first().getAttribute('data-testid');
    await page.getByTestId('find-next').click();
    await page.locator('[data-testid="find-pager"][data-page="2"]').waitFor(WAIT);
    expect(await page.locator('[data-testid^="found-"]').first().getAttribute('data-testid')).not.toBe(first);
    await page.getByTestId('find-previous').click();
    await page.locator('[data-testid="find-pager"][data-page="1"]').waitFor(WAIT);
    expect(await page.locator('[data-testid^="found-"]').first().getAttribute('data-testid')).toBe(first);
  }, 60_000);

  test('counts per state and runs over time are drawn by uPlot from the aggregate reads', async () => {
    await page.getByTestId('find-state').selectOption('');
    await page.getByTestId('find-tag').fill('');
    await page.getByTestId('find-from').fill('');
    await page.getByTestId('find-to').fill('');
    await page.getByTestId('find-submit').click();
    const perState: Record<string, number> = {};
    for (const o of occurrences) perState[stateOf(o)] = (perState[stateOf(o)] ?? 0) + 1;
    // The charts of the previous test's filter stay drawn until the reads of this one answer: wait for these.
    const chart = page.getByTestId('chart-counts');
    await chart.locator('canvas').waitFor(WAIT);
    const drawn = async () => {
      const counts = JSON.parse((await chart.getAttribute('data-counts')) ?? '{}') as Record<string, number>;
      return Object.fromEntries(Object.keys(perState).map((state) => [state, counts[state]]));
    };
    await expect.poll(drawn, WAIT).toEqual(perState);
    const overTime = page.getByTestId('chart-runs-over-time');
    await overTime.locator('canvas').waitFor(WAIT);
    // The default range is the 24 hours up to the engine's clock: every run of this store started in it.
    await expect.poll(async () => Number(await overTime.getAttribute('data-total')), WAIT).toBe(runs.length);
    expect(await page.locator('#find-section .uplot').count()).toBe(2);
    const shot = join(world.dir, 'console-find.png');
    await page.locator('#find-section').screenshot({ path: shot });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-find.png'));
  }, 60_000);

  test('a bad query is a typed refusal naming its field, and the page says so', async () => {
    const get = async (query: string) => {
      const response = await fetch(`${world.url}/api/v1/console/occurrences?${query}`);
      return {
        status: response.status,
        body: (await response.json()) as { error: { code: string; details?: object } },
      };
    };
    for (const [query, field] of [
      ['limit=1000', 'limit'],
      ['state=bogus', 'state'],
      ['cursor=not-a-cursor', 'cursor'],
      ['from=yesterday', 'from'],
      ['q=a&q=b', 'q'],
      ['from=2026-03-02T12:00:00Z&to=2026-03-02T11:00:00Z', 'from'],
    ]) {
      const answer = await get(query!);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { field } });
    }
    await page.getByTestId('find-q').fill('<script>');
    await page.getByTestId('find-submit').click();
    await page.getByTestId('find-refused').filter({ hasText: 'VALIDATION_FAILED (400)' }).waitFor(WAIT);
  }, 60_000);

  test('the page raised no error', () => {
    expect(pageErrors).toEqual([]);
  });

  test('no read the page made listed the occurrences, runs or attempts: every one came from an index', () => {
    expect(answers.length).toBeGreaterThan(20);
    expect(wholeKindReads).toEqual([]);
  });
});
