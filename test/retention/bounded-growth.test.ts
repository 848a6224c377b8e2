import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { command } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { residueOf, residueTotal, type Residue } from '../support/store-residue.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-growth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let folders = 0;

const SMALL = 3;
const DAY_MS = 86_400_000;

/** One day of work: the 09:00 slot, then a manual run at 12:00, each run to its receipt. */
async function settleDay(h: Harness, day: number): Promise<void> {
  const date = new Date(Date.parse('2026-03-02T00:00:00.000Z') + day * DAY_MS).toISOString().slice(0, 10);
  h.clock.set(new Date(`${date}T09:00:00.000Z`));
  await h.engine.tick();
  h.clock.advance({ minutes: 2 });
  expect((await h.engine.tick()).errors).toEqual([]);
  h.clock.set(new Date(`${date}T12:00:00.000Z`));
  const runNow = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: `growth-run-now-${date}` }),
  );
  expect(runNow.outcome, JSON.stringify(runNow.error)).toBe('committed');
  h.clock.advance({ minutes: 2 });
  expect((await h.engine.tick()).errors).toEqual([]);
}

/**
 * Runs `days` days of work, then lets the engine's clock pass every window of what they left (a year on), and
 * counts what the store still holds. The definition is paused first, so the year plans nothing new.
 */
async function residueAfter(store: Store, days: number, url?: string): Promise<Residue> {
  const h = await harness({
    store,
    retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
    retention: { sweepEveryMinutes: 0 },
  });
  try {
    for (let day = 0; day < days; day++) await settleDay(h, day);
    await h.ok(command('definition.pause.v1', { automationId: 'daily', reason: 'measured' }, { expectedRevision: 3 }));
    const end = Date.parse('2026-03-02T00:00:00.000Z') + days * DAY_MS;
    // Each step passes another window (retention, then whatever retention keeps for a while after it).
    for (const later of [2, 40, 100, 365]) {
      h.clock.set(new Date(end + later * DAY_MS));
      expect((await h.engine.tick()).errors).toEqual([]);
    }
    return await residueOf(h.store, url);
  } finally {
    await h.engine.stop();
    await h.store.close();
  }
}

function report(name: string, small: Residue, large: Residue): void {
  console.log(
    `${name}: residue after ${SMALL} days ${residueTotal(small)}, after ${4 * SMALL} days ${residueTotal(large)}\n` +
      `  ${SMALL}: ${JSON.stringify(small)}\n  ${4 * SMALL}: ${JSON.stringify(large)}`,
  );
}

const FILE_STORES: Array<[string, (folder: string) => Promise<Store>]> = [
  ['memory', async () => new MemoryStore()],
  ['json', (folder) => openStore(join(folder, 'store.json'), 'json')],
  ['sqlite', (folder) => openStore(join(folder, 'store.sqlite'), 'sqlite')],
];

describe.each(FILE_STORES)('bounded growth on the %s store', (name, open) => {
  test(`what ${SMALL} and ${4 * SMALL} days of settled, compacted work leave behind is the same`, async () => {
    const measure = async (days: number) => {
      const folder = join(dir, `s-${++folders}`);
      mkdirSync(folder);
      return residueAfter(await open(folder), days);
    };
    const small = await measure(SMALL);
    const large = await measure(4 * SMALL);
    report(name, small, large);
    expect({ ...large, bytes: undefined }).toEqual({ ...small, bytes: undefined });
  }, 120_000);
});

describePostgres('bounded growth on the PostgreSQL store', (socketDir) => {
  test(`what ${SMALL} and ${4 * SMALL} days of settled, compacted work leave behind is the same`, async () => {
    const measure = async (days: number) => {
      const url = await freshDatabase(socketDir, 'growth');
      return residueAfter(await openStore(url as `postgresql://${string}`), days, url);
    };
    const small = await measure(SMALL);
    const large = await measure(4 * SMALL);
    report('postgres', small, large);
    expect(large).toEqual(small);
  }, 120_000);
});
