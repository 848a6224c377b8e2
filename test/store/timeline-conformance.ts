import { describe, expect, test } from 'vitest';
import type {
  Store,
  StoreReader,
  StoreTransaction,
  TimelineEntry,
  TimelineFilter,
  TimelineKind,
} from '../../src/store/store.js';
import type { StoreHarness } from './store-conformance.js';

const AUTOMATIONS = ['a', 'b', 'c'];
// No live occurrence state (claimed … recovery_required): PostgreSQL admits one such per automation.
const STATES = ['planned', 'eligible', 'succeeded', 'failed'];
const TERMINAL = new Set(['succeeded', 'failed']);
/** Few instants, so many entries share one and the id decides their order. */
const INSTANTS = ['2026-03-02T08:00:00.000Z', '2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z'];

/** A record as the engine writes an occurrence (slot) or a run (start). */
function entity(kind: TimelineKind, state: string, automationId: string, at: string) {
  return {
    snapshot: { value: state, context: { automationId } },
    attributes: { automationId, ...(kind === 'occurrence' ? { scheduledFor: at } : { startedAt: at }) },
  };
}

/** A fixed-seed generator: the same records on every store and every run. */
function generator(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0;
    return (s >>> 8) % n;
  };
}

/** What every timeline must answer, from the records themselves. */
async function expected(r: StoreReader, kind: TimelineKind, filter: TimelineFilter): Promise<TimelineEntry[]> {
  const field = kind === 'occurrence' ? 'scheduledFor' : 'startedAt';
  return (await r.list<ReturnType<typeof entity>>(kind))
    .map((record) => ({
      id: record.id,
      at: (record.data.attributes as Record<string, string>)[field]!,
      state: record.data.snapshot.value,
      automationId: record.data.attributes.automationId,
    }))
    .filter(
      (e) =>
        (filter.automationIds === undefined || filter.automationIds.includes(e.automationId)) &&
        (filter.states === undefined || filter.states.includes(e.state)) &&
        (filter.from === undefined || e.at >= filter.from) &&
        (filter.to === undefined || e.at < filter.to),
    )
    .sort((x, y) => (x.at === y.at ? (x.id < y.id ? 1 : -1) : x.at < y.at ? 1 : -1));
}

/** Every page of a timeline in turn, `limit` at a time, following each page's last entry. */
async function walk(r: StoreReader, kind: TimelineKind, filter: TimelineFilter, limit: number) {
  const seen: TimelineEntry[] = [];
  for (let pages = 0; pages < 100; pages++) {
    const last = seen.at(-1);
    const page = await r.timeline(kind, { ...filter, limit, ...(last === undefined ? {} : { before: last }) });
    expect(page.length).toBeLessThanOrEqual(limit);
    seen.push(...page);
    if (page.length < limit) break;
  }
  return seen;
}

const FILTERS: TimelineFilter[] = [
  {},
  { automationIds: ['b'] },
  { automationIds: ['a', 'c'] },
  { automationIds: [] },
  { states: ['eligible', 'failed'] },
  { from: INSTANTS[1], to: INSTANTS[2] },
  { automationIds: ['a'], states: ['succeeded'], from: INSTANTS[0] },
];

/** Pages and counts of every filter on both kinds agree with the records, in `r`. */
async function checkAgainstRecords(r: StoreReader): Promise<void> {
  for (const kind of ['occurrence', 'run'] as const)
    for (const filter of FILTERS) {
      const want = await expected(r, kind, filter);
      expect(await walk(r, kind, filter, 4), `${kind} ${JSON.stringify(filter)}`).toEqual(want);
      const counts: Record<string, number> = {};
      for (const e of want) counts[e.state] = (counts[e.state] ?? 0) + 1;
      expect(await r.timelineCounts(kind, filter), `${kind} counts ${JSON.stringify(filter)}`).toEqual(counts);
    }
}

/** Writes, moves along, seals and expires records at random (a fixed seed), in one transaction. */
async function churn(tx: StoreTransaction, next: (n: number) => number, round: number): Promise<void> {
  for (let i = 0; i < 12; i++) {
    const kind = next(2) === 0 ? 'occurrence' : 'run';
    const id = `${kind[0]}${next(30).toString().padStart(2, '0')}`;
    const current = await tx.get<ReturnType<typeof entity>>(kind, id);
    if (current?.terminal) {
      if (next(3) === 0) await tx.expire(kind, id, current.version);
      continue;
    }
    const state = STATES[next(STATES.length)]!;
    const at =
      current === undefined
        ? INSTANTS[next(INSTANTS.length)]!
        : ((current.data.attributes as { scheduledFor?: string; startedAt?: string }).scheduledFor ??
          (current.data.attributes as { startedAt: string }).startedAt);
    const automationId = current?.data.attributes.automationId ?? AUTOMATIONS[next(AUTOMATIONS.length)]!;
    await tx.put(kind, id, entity(kind, state, automationId, at), {
      expectedVersion: current?.version ?? null,
      terminal: TERMINAL.has(state) && round % 2 === 0,
    });
  }
}

/** {@link StoreReader.timeline} on every store: pages, counts, a transaction's own writes and reopening. */
export function describeTimelineConformance(name: string, harness: StoreHarness): void {
  describe(`${name} store: the timelines of occurrences and runs`, () => {
    test('pages newest first and counts by state as the records say, through churn, in a transaction and reopened', async () => {
      let store: Store = await harness.create();
      const next = generator(20261204);
      try {
        for (let round = 0; round < 6; round++) {
          await store.transact(async (tx) => {
            await churn(tx, next, round);
            await checkAgainstRecords(tx);
          });
          await store.read(checkAgainstRecords);
        }
        // A rolled-back transaction leaves the timelines as they were.
        const before = await store.read((r) => r.timeline('occurrence', { limit: 100 }));
        await expect(
          store.transact(async (tx) => {
            await churn(tx, next, 1);
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect(await store.read((r) => r.timeline('occurrence', { limit: 100 }))).toEqual(before);
        if (harness.reopen !== undefined) {
          store = await harness.reopen(store);
          await store.read(checkAgainstRecords);
          await store.transact((tx) => churn(tx, next, 2));
          await store.read(checkAgainstRecords);
        }
      } finally {
        await store.close();
      }
    }, 60_000);
  });
}
