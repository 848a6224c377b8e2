import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { dashboardRoutes } from '../../src/daemon/dashboard-routes.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { StoreReader } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';
import { browserMissing, inCi, launchBrowser, type TestBrowser } from './browser.js';
import { ensureDashboardBuilt } from './world.js';

/** Hundreds of definitions, each planned hourly: PASSES passes give DEFINITIONS × PASSES occurrences. */
const DEFINITIONS = 200;
const PASSES = 10;
const WAIT = { timeout: 30_000 };
/** The record kinds that grow with history; a read of one of them without a limit is a full-table load. */
const HISTORY_KINDS = new Set(['occurrence', 'run', 'attempt', 'receipt', 'definition-revision']);

if (browserMissing !== undefined && !inCi) console.log(`console load browser test skipped: ${browserMissing}`);

interface ReadCall {
  op: 'list' | 'get';
  kind: string;
  limit?: number;
}

/** Records every list and get the store answers through `read` (the daemon's and the command handler's reads). */
function spyOnReads(store: SqliteStore): ReadCall[] {
  const calls: ReadCall[] = [];
  const read = store.read.bind(store);
  const watched = (reader: StoreReader): StoreReader =>
    new Proxy(reader, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (typeof value !== 'function') return value;
        if (name !== 'list' && name !== 'get') return value.bind(target);
        return (kind: string, options?: { limit?: number }) => {
          calls.push({ op: name, kind, ...(name === 'list' ? { limit: options?.limit } : {}) });
          return (value as (...args: unknown[]) => unknown).call(target, kind, options);
        };
      },
    });
  store.read = ((body: (reader: StoreReader) => unknown) => read((reader) => body(watched(reader)))) as never;
  return calls;
}

/** Creates and activates the definitions, many commands at once so the store's group commit batches them. */
async function seedDefinitions(engine: Engine): Promise<void> {
  const hourly = `FREQ=DAILY;BYHOUR=${Array.from({ length: 24 }, (_, h) => h).join(',')}`;
  const ok = async (envelope: unknown) => {
    const response = await engine.commands.handle(envelope);
    if (response.outcome === 'rejected') throw new Error(JSON.stringify(response.error));
  };
  await Promise.all(
    Array.from({ length: DEFINITIONS }, async (_, i) => {
      const id = `load-${String(i).padStart(4, '0')}`;
      await ok(command('definition.create.v1', { definition: definitionBody(id, { rrule: hourly }) }));
      const paused = definitionBody(id, { revision: 2, lifecycleState: 'paused', rrule: hourly });
      await ok(command('definition.revise.v1', { definition: paused }, { expectedRevision: 1 }));
      await ok(command('definition.activate.v1', { automationId: id }, { expectedRevision: 2 }));
    }),
  );
}

describe.skipIf(browserMissing !== undefined)('the console under load: bounded reads (Debian chromium)', () => {
  let dir: string;
  let store: SqliteStore;
  let engine: Engine;
  let daemon: Daemon;
  let browser: TestBrowser;
  let page: Page;
  let calls: ReadCall[];

  beforeAll(async () => {
    ensureDashboardBuilt();
    dir = mkdtempSync(join(tmpdir(), 'coven-console-load-'));
    // NORMAL trades the last commits on power loss for speed: this store is a throwaway fixture.
    store = await SqliteStore.open(join(dir, 'automations.sqlite'), { synchronous: 'NORMAL' });
    const clock = new SimulatedClock('2026-03-02T00:30:00.000Z');
    const runtime = new SimulatedRuntime({ durationMs: 60_000 });
    engine = createEngine({ store, clock, runtimes: [runtime], instanceId: 'engine-load' });
    const started = performance.now();
    await seedDefinitions(engine);
    for (let pass = 0; pass < PASSES; pass++) {
      clock.advance({ minutes: 60 });
      await engine.tick();
    }
    console.log(
      `seeded ${DEFINITIONS} definitions and ${DEFINITIONS * PASSES} occurrences in ` +
        `${Math.round(performance.now() - started)} ms`,
    );
    calls = spyOnReads(store);
    daemon = await startDaemon({
      engine,
      store,
      storeFile: store.file,
      listen: { host: '127.0.0.1', port: 0 },
      plugins: [dashboardRoutes()],
    });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    // The global changefeed would replay every seeded event into the page; this test is about reads.
    await page.route('**/api/v1/events**', (route) => route.abort());
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.close();
    await engine?.stop();
    await store?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  test('machine counts, one occurrence chart and the editor load with bounded reads: no history table read whole', async () => {
    const total = await store.read(async (r) => (await r.list('occurrence')).length);
    expect(total).toBe(DEFINITIONS * PASSES);
    const opened = performance.now();
    await page.goto(`${daemon.url}/?token=${daemon.token}`);
    // The other panels' first reads are theirs; the window measured starts once the page has settled.
    await page.locator('#definitions[data-refreshed-at]').waitFor(WAIT);
    await page.locator('[data-testid="machine-counts"][data-machine="occurrence.v1"]').waitFor(WAIT);
    console.log(`page settled in ${Math.round(performance.now() - opened)} ms`);
    calls.length = 0;

    const started = performance.now();
    await page.getByTestId('machine-run').click();
    await page
      .locator(`[data-testid="machine-counts"][data-machine="run.v1"][data-live="${DEFINITIONS}"]`)
      .waitFor(WAIT);
    await page.locator(`[data-testid="count-running"][data-count="${DEFINITIONS}"]`).waitFor(WAIT);
    await page.getByTestId('machine-occurrence').click();
    await page.locator(`[data-testid="machine-counts"][data-machine="occurrence.v1"]`).waitFor(WAIT);
    await page.locator(`[data-testid="count-running"][data-count="${DEFINITIONS}"]`).waitFor(WAIT);
    const countsMs = performance.now() - started;
    const shot = join(dir, 'console-machine-counts.png');
    await page.locator('#machine-view').screenshot({ path: shot });
    if (process.env.COVEN_UPDATE_SCREENSHOT === '1')
      copyFileSync(shot, join(packageRoot(), 'docs', 'console-machine-counts.png'));

    const [occurrenceId] = await engine.services.store.read(async (r) =>
      (await r.liveWork('occurrence')).slice(0, 1).map((e) => e.id),
    );
    const reads = calls.length;
    await page.getByTestId('chart-kind').selectOption('occurrence');
    await page.getByTestId('chart-id').fill(occurrenceId!);
    await page.getByTestId('chart-id').press('Enter');
    await page.locator('[data-testid="entity-chart"][data-state="running"]').waitFor(WAIT);
    expect(await page.getByTestId('path-step').count()).toBe(5);
    console.log(
      `two machine counts in ${Math.round(countsMs)} ms (${reads} record reads); ` +
        `one chart: ${calls.length - reads} record reads; ${total} occurrences in the store`,
    );

    // The editor on one of the hundreds of definitions: its fields, the schedule's next runs, no history read.
    const chartReads = calls.length;
    await page.getByTestId('edit-load-0007').click();
    await page.getByTestId('editor-heading').filter({ hasText: 'load-0007' }).waitFor(WAIT);
    await page.getByTestId('diff').filter({ hasText: 'no change yet' }).waitFor(WAIT);
    expect(await page.getByTestId('preview-slot').count()).toBe(5);
    console.log(`the editor on one definition: ${calls.length - chartReads} record reads`);

    const unbounded = calls.filter((c) => c.op === 'list' && HISTORY_KINDS.has(c.kind) && c.limit === undefined);
    expect(unbounded).toEqual([]);
    // Each count reads the live entities (a live index entry and a record each), never the settled ones.
    const gets = calls.filter((c) => c.op === 'get' && HISTORY_KINDS.has(c.kind)).length;
    expect(gets).toBeLessThanOrEqual(2 * 3 * DEFINITIONS + 50);
    expect(gets).toBeLessThan(total);
  }, 120_000);
});
