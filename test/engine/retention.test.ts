import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { StreamReducer } from '../../src/changefeed/reducer.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { createEngine } from '../../src/engine/engine.js';
import { KINDS } from '../../src/domain/records.js';
import { RetentionPolicy } from '../../src/retention/policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { command } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-retention-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const STORES: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => new MemoryStore()],
  ['json', () => openStore(join(dir, `r-${++files}.json`), 'json')],
  ['sqlite', () => openStore(join(dir, `r-${++files}.sqlite`), 'sqlite')],
];

/** Runs the 09:00 slot of the harness's `daily` automation to a receipt; returns its occurrence id. */
async function settleOneSlot(h: Harness, day: string): Promise<string> {
  h.clock.set(new Date(`${day}T09:00:00.000Z`));
  await h.engine.tick();
  h.clock.advance({ minutes: 2 });
  await h.engine.tick();
  const occurrence = (await h.read.occurrences()).find((o) => String(o.scheduledFor).startsWith(day));
  expect(occurrence?.state).toBe('succeeded');
  return occurrence!.occurrenceId as string;
}

async function kindsHolding(store: Store, occurrenceId: string): Promise<string[]> {
  return store.read(async (r) => {
    const kinds = [
      KINDS.occurrence,
      KINDS.run,
      KINDS.attempt,
      KINDS.receipt,
      KINDS.outbox,
      KINDS.fenceRun,
      'adoption',
      KINDS.occurrenceKey,
    ];
    const holding: string[] = [];
    for (const kind of kinds)
      if ((await r.list<unknown>(kind)).some((x) => JSON.stringify([x.id, x.data]).includes(occurrenceId)))
        holding.push(kind);
    return holding;
  });
}

async function readEvents(h: Harness, stream: { kind: string; id: string }, after?: number) {
  return h.engine.commands.handle(command('events.read.v1', { stream, ...(after === undefined ? {} : { after }) }));
}

describe.each(STORES)('retention on the %s store', (_, open) => {
  test('an occurrence settled longer ago than its class keeps only a snapshot per stream; live work and newer history stay', async () => {
    const t = await harness({
      store: await open(),
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
    });
    try {
      const first = await settleOneSlot(t, '2026-03-02');
      const runId = `run-${first}`;
      const eventsBefore = await t.read.stream('occurrence', first);
      expect(eventsBefore.length).toBeGreaterThan(3);
      // A day later it has not expired yet (settled at 09:01 + 1 day); the second slot runs meanwhile.
      const second = await settleOneSlot(t, '2026-03-03');
      expect(await kindsHolding(t.store, first)).toContain(KINDS.occurrence);

      // The next day's pass: the first occurrence expired, the second (settled a day later) has not.
      t.clock.set(new Date('2026-03-03T09:05:00.000Z'));
      const report = await t.engine.tick();
      expect(report.errors).toEqual([]);
      expect(report.compacted).toBe(1);
      expect(await kindsHolding(t.store, first)).toEqual([KINDS.occurrenceKey]);
      expect(await kindsHolding(t.store, second)).toEqual(
        expect.arrayContaining([KINDS.occurrence, KINDS.run, KINDS.attempt, KINDS.receipt]),
      );

      for (const [kind, id, entity] of [
        ['occurrence', first, 'occurrence'],
        ['run', runId, 'run'],
      ] as const) {
        const events = await t.read.stream(kind, id);
        expect(events).toHaveLength(1);
        const snapshot = events[0]!;
        expect(validateAgainst('event-envelope.schema.json', snapshot).problems).toEqual([]);
        expect(snapshot).toMatchObject({
          kind: 'feed.snapshot',
          payload: { reason: 'retention_compaction', throughSequence: snapshot.sequence },
        });
        // A consumer starting from scratch rebuilds the final state from the snapshot alone.
        const reducer = new StreamReducer<Record<string, { state: string }>>({ kind, id }, (s) => s, {});
        for (const e of events) reducer.apply(e);
        expect(reducer.state[entity]?.state).toBe('succeeded');
        expect(reducer.cursor).toBe(snapshot.sequence);
        // A consumer behind the compaction is told so, never silently skipped ahead.
        const behind = await readEvents(t, { kind, id }, 0);
        expect(behind.error).toMatchObject({ code: 'CURSOR_EXPIRED' });
        const fresh = await readEvents(t, { kind, id });
        expect((fresh.result!.events as EventEnvelope[]).map((e) => e.kind)).toEqual(['feed.snapshot']);
      }
      // Operator commands on what retention removed say so, with the final state, instead of a bare NOT_FOUND.
      const cancel = await t.engine.commands.handle(
        command('occurrence.cancel.v1', { occurrenceId: first, reason: 'too late' }),
      );
      expect(cancel.error).toMatchObject({
        code: 'NOT_FOUND',
        details: { compactedAt: '2026-03-03T09:05:00.000Z', finalState: { occurrence: { state: 'succeeded' } } },
      });
      expect(cancel.error?.message).toContain('compacted by retention');
      const never = await t.engine.commands.handle(
        command('occurrence.cancel.v1', { occurrenceId: 'never-existed', reason: 'typo' }),
      );
      expect(never.error).toMatchObject({ code: 'NOT_FOUND', message: 'no occurrence with id never-existed' });
      const feedBehind = await readEvents(t, { kind: 'feed', id: 'all' }, 0);
      expect(feedBehind.error).toMatchObject({ code: 'CURSOR_EXPIRED' });
      const feed = await t.read.feed();
      expect(feed.filter((e) => e.occurrenceId === first).map((e) => e.kind)).toEqual([
        'feed.snapshot',
        'feed.snapshot',
      ]);

      // The engine carries on: the next slot plans, runs and settles on the compacted store.
      await settleOneSlot(t, '2026-03-04');
      expect(await t.engine.tick()).toMatchObject({ errors: [] });
    } finally {
      await t.store.close();
    }
  });
});

describe.each(STORES)('a slot is planned once, before and after retention, on the %s store', (_, open) => {
  /** As a second engine with an older plan cursor sees the store: the slot looks due and unplanned. */
  async function rewindPlanCursor(h: Harness): Promise<void> {
    await h.store.transact(async (tx) => {
      const cursor = await tx.get(KINDS.planCursor, 'daily');
      await tx.put(
        KINDS.planCursor,
        'daily',
        { lastSlot: '2026-03-01T09:00:00.000Z' },
        { expectedVersion: cursor!.version },
      );
    });
  }

  test('the occurrence fences its slot while it exists; compaction leaves the slot key to fence it after', async () => {
    const h = await harness({
      store: await open(),
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
      retention: { sweepEveryMinutes: 0 },
    });
    try {
      const id = await settleOneSlot(h, '2026-03-02');
      // Planning writes no key record: the occurrence's id is derived from its slot.
      expect(await kindsHolding(h.store, id)).not.toContain(KINDS.occurrenceKey);
      await rewindPlanCursor(h);
      h.clock.set(new Date('2026-03-02T09:30:00.000Z'));
      expect(await h.engine.tick()).toMatchObject({ planned: 0, errors: [] });

      h.clock.set(new Date('2026-03-03T09:30:00.000Z'));
      await settleOneSlot(h, '2026-03-03');
      expect(await kindsHolding(h.store, id)).toEqual([KINDS.occurrenceKey]);
      await rewindPlanCursor(h);
      // Back at the compacted slot (a second engine's clock): its key still fences it.
      h.clock.set(new Date('2026-03-02T09:30:00.000Z'));
      expect(await h.engine.tick()).toMatchObject({ planned: 0, errors: [] });
      expect((await h.read.occurrences()).map((o) => o.occurrenceId)).not.toContain(id);
    } finally {
      await h.store.close();
    }
  });
});

describe.each(STORES.filter(([name]) => name !== 'memory'))('retention survives a restart on the %s store', (name) => {
  test('after reopening, compacted streams still start at their snapshot and new work continues the sequences', async () => {
    const file = join(dir, `restart-${++files}.${name}`);
    const first = await harness({
      store: await openStore(file, name as 'json' | 'sqlite'),
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
    });
    const compacted = await settleOneSlot(first, '2026-03-02');
    first.clock.set(new Date('2026-03-03T09:30:00.000Z'));
    expect((await first.engine.tick()).compacted).toBe(1);
    const feedBefore = (await first.read.feed()).map((e) => e.eventId);
    await first.engine.stop();
    await first.store.close();

    const again = await harness({
      store: await openStore(file, name as 'json' | 'sqlite'),
      start: '2026-03-04T09:00:00.000Z',
    });
    try {
      expect((await again.read.feed()).map((e) => e.eventId)).toEqual(feedBefore);
      expect((await again.read.stream('occurrence', compacted)).map((e) => e.kind)).toEqual(['feed.snapshot']);
      await settleOneSlot(again, '2026-03-04');
      const feed = await again.store.read((r) => r.readFeed());
      const positions = feed.map((e) => e.position);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
      expect(new Set(positions).size).toBe(positions.length);
    } finally {
      await again.store.close();
    }
  });
});

describe('retention classes and budget', () => {
  test('standard history outlives a day and goes after 30; legal_hold never goes; `retention: false` keeps everything', async () => {
    for (const [classification, retention, after2Days, after31Days] of [
      ['standard', undefined, 0, 1],
      ['legal_hold', undefined, 0, 0],
      ['ephemeral', false, 0, 0],
    ] as const) {
      const h = await harness({
        retentionClasses: { occurrenceHistory: { classification } },
        ...(retention === undefined ? {} : { retention }),
      });
      const id = await settleOneSlot(h, '2026-03-02');
      h.clock.set(new Date('2026-03-04T08:00:00.000Z'));
      expect((await h.engine.tick()).compacted, `${classification} after 2 days`).toBe(after2Days);
      h.clock.set(new Date('2026-04-02T08:00:00.000Z'));
      expect((await h.engine.tick()).compacted, `${classification} after 31 days`).toBe(after31Days);
      expect((await kindsHolding(h.store, id)).includes(KINDS.occurrence)).toBe(after31Days === 0);
    }
  });

  test('receipts of a longer-lived class outlast their occurrence, then expire on their own window', async () => {
    const h = await harness({
      retentionClasses: {
        occurrenceHistory: { classification: 'ephemeral' },
        receipts: { classification: 'standard' },
      },
      retention: { sweepEveryMinutes: 0 },
    });
    const id = await settleOneSlot(h, '2026-03-02');
    h.clock.set(new Date('2026-03-03T12:00:00.000Z'));
    expect((await h.engine.tick()).compacted).toBe(1);
    expect(await kindsHolding(h.store, id)).toEqual([KINDS.receipt, KINDS.occurrenceKey]);
    h.clock.set(new Date('2026-04-02T12:00:00.000Z'));
    await h.engine.tick();
    // Meanwhile its snapshot window and the planner's look-back passed: its streams and slot key are gone too.
    expect(await kindsHolding(h.store, id)).toEqual([]);
    expect(await h.read.stream('occurrence', id)).toEqual([]);
  });

  test('a store written before retention existed: the first sweep queues its settled occurrences, then compacts them', async () => {
    const before = await harness({
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
      retention: false,
    });
    const id = await settleOneSlot(before, '2026-03-02');
    // As such a store holds it: settled history, no retention queue, no backfill marker.
    await before.store.transact(async (tx) => {
      for (const kind of ['retention-due/ephemeral'])
        for (const r of await tx.list(kind)) await tx.delete(kind, r.id, r.version);
      expect(await tx.get('meta', 'retention-backfill')).toBeUndefined();
    });
    const after = await harness({
      store: before.store,
      start: '2026-03-05T08:00:00.000Z',
      retention: { sweepEveryMinutes: 0 },
    });
    expect((await after.engine.tick()).compacted).toBe(1);
    expect(await kindsHolding(after.store, id)).toEqual([KINDS.occurrenceKey]);
    expect(await after.store.read((r) => r.get('meta', 'retention-backfill'))).toBeDefined();
    after.clock.advance({ minutes: 1 });
    expect((await after.engine.tick()).compacted).toBe(0);
  });

  test('a pass compacts at most perPass occurrences, oldest first; the next sweep takes the rest', async () => {
    const h = await harness({
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
      retention: { perPass: 2, sweepEveryMinutes: 0, windowDays: { ephemeral: 5 } },
    });
    const ids = [
      await settleOneSlot(h, '2026-03-02'),
      await settleOneSlot(h, '2026-03-03'),
      await settleOneSlot(h, '2026-03-04'),
    ];
    h.clock.set(new Date('2026-03-10T08:00:00.000Z'));
    expect((await h.engine.tick()).compacted).toBe(2);
    expect((await kindsHolding(h.store, ids[0]!)).includes(KINDS.occurrence)).toBe(false);
    expect((await kindsHolding(h.store, ids[1]!)).includes(KINDS.occurrence)).toBe(false);
    expect((await kindsHolding(h.store, ids[2]!)).includes(KINDS.occurrence)).toBe(true);
    h.clock.advance({ minutes: 1 });
    expect((await h.engine.tick()).compacted).toBe(1);
    expect((await h.engine.tick()).compacted).toBe(0);
  });
});

test('retention options are validated once, at engine creation', () => {
  expect(() => RetentionPolicy.from({ windowDays: { standard: 0 } })).toThrow(RangeError);
  expect(() => RetentionPolicy.from({ windowDays: { forever: 1 } as never })).toThrow(/unknown class/);
  expect(() => RetentionPolicy.from({ perPass: 0 })).toThrow(RangeError);
  expect(() =>
    createEngine({ store: new MemoryStore(), runtimes: [], retention: { windowDays: { ephemeral: -1 } } }),
  ).toThrow(RangeError);
  const policy = RetentionPolicy.from({ windowDays: { standard: 7, legal_hold: 1 } });
  expect(policy.windowMs('standard')).toBe(7 * 86_400_000);
  expect(policy.windowMs('legal_hold')).toBeNull();
  expect(policy.windowMs('unknown-class')).toBeNull();
  expect(policy.outlives('extended', 'ephemeral')).toBe(true);
  expect(policy.outlives('legal_hold', 'standard')).toBe(true);
  expect(policy.outlives('ephemeral', 'standard')).toBe(false);
  expect(policy.expiringClasses()).toEqual(['ephemeral', 'standard', 'extended']);
});
