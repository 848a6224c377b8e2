import { describe, expect, test } from 'vitest';
import { ADOPTION_KIND } from '../../src/domain/adoptions.js';
import { command } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const RUN_NOW_KEY = 'window-run-now-0001';

async function runNow(h: Harness) {
  return h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: RUN_NOW_KEY }),
  );
}

/** A manual run at 12:00 on 2 March, run to its receipt on the harness's injected clock. */
async function settledManualRun(h: Harness): Promise<string> {
  h.clock.set(new Date('2026-03-02T12:00:00.000Z'));
  const first = await runNow(h);
  expect(first.outcome, JSON.stringify(first.error)).toBe('committed');
  h.clock.advance({ minutes: 2 });
  expect((await h.engine.tick()).errors).toEqual([]);
  return first.result!.occurrenceId as string;
}

/** Two passes at `instant`, two minutes apart: a daily slot the first plans has settled by the second. */
async function tickAt(h: Harness, instant: string) {
  h.clock.set(new Date(instant));
  const report = await h.engine.tick();
  expect(report.errors).toEqual([]);
  h.clock.advance({ minutes: 2 });
  expect((await h.engine.tick()).errors).toEqual([]);
  return report;
}

const adoptionOf = (h: Harness, key: string) => h.store.read((r) => r.get(ADOPTION_KIND, key));

describe('the adoption window', () => {
  test('within the window a re-sent key replays; after it (what it started retired) the key is a new request', async () => {
    const h = await harness({
      activate: true,
      retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
      retention: { sweepEveryMinutes: 0, snapshotDays: 6, adoptionWindowDays: 5 },
    });
    const occurrenceId = await settledManualRun(h);
    // Compacted a day after settling: the replay is still answered from the record, with the first answer.
    await tickAt(h, '2026-03-03T13:00:00.000Z');
    expect(await h.store.read((r) => r.get('occurrence', occurrenceId))).toBeUndefined();
    const replay = await runNow(h);
    expect(replay).toMatchObject({
      outcome: 'replayed',
      replay: { firstCommittedAt: '2026-03-02T12:00:00.000Z' },
      result: { occurrenceId, status: 'claimed' },
    });
    // Past the adoption window (5 days) but not yet past the snapshot window of what it started: kept.
    await tickAt(h, '2026-03-07T12:30:00.000Z');
    expect(await adoptionOf(h, RUN_NOW_KEY)).toBeDefined();
    expect((await runNow(h)).outcome).toBe('replayed');
    // The streams are retired (compacted 3 March + 6 days), then the record goes.
    const report = await tickAt(h, '2026-03-09T14:00:00.000Z');
    expect(report.errors).toEqual([]);
    expect(await h.read.stream('occurrence', occurrenceId)).toEqual([]);
    expect(await adoptionOf(h, RUN_NOW_KEY)).toBeUndefined();

    // The key is forgotten: the request is judged afresh, as a first one — here a new manual run, whose
    // history starts its stream over.
    const again = await runNow(h);
    expect(again).toMatchObject({ outcome: 'committed', result: { occurrenceId, status: 'claimed' } });
    const events = await h.read.stream('occurrence', occurrenceId);
    expect(events[0]).toMatchObject({ sequence: 0, payload: { from: 'none' } });
    // While that run is live, its key replays again and never starts a second one.
    expect((await runNow(h)).outcome).toBe('replayed');
    await h.store.close();
  });

  test('a command whose guard moved on is refused when re-sent after the window, never applied twice', async () => {
    const h = await harness({ retention: { sweepEveryMinutes: 0, adoptionWindowDays: 1 } });
    const pause = command('definition.pause.v1', { automationId: 'daily', reason: 'once' }, { expectedRevision: 3 });
    expect((await h.engine.commands.handle(pause)).outcome).toBe('committed');
    expect((await h.engine.commands.handle(pause)).outcome).toBe('replayed');
    await h.ok(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 4 }));
    await tickAt(h, '2026-03-04T08:00:00.000Z');
    expect(await adoptionOf(h, pause.adoptionKey)).toBeUndefined();
    const late = await h.engine.commands.handle(pause);
    expect(late).toMatchObject({ outcome: 'rejected', error: { code: 'REVISION_CONFLICT' } });
    expect(await h.store.read((r) => r.get<{ snapshot: { value: string } }>('definition', 'daily'))).toMatchObject({
      data: { snapshot: { value: 'active' } },
    });
  });

  test('a record whose occurrence is still stored is kept whatever its age (legal_hold history is never compacted)', async () => {
    const h = await harness({
      retentionClasses: { occurrenceHistory: { classification: 'legal_hold' } },
      retention: { sweepEveryMinutes: 0, adoptionWindowDays: 1 },
    });
    const occurrenceId = await settledManualRun(h);
    await tickAt(h, '2026-06-01T00:00:00.000Z');
    expect(await h.store.read((r) => r.get('occurrence', occurrenceId))).toBeDefined();
    expect(await runNow(h)).toMatchObject({ outcome: 'replayed', result: { occurrenceId } });
  });
});

test('adoption and snapshot windows are validated once, at engine creation', async () => {
  const { RetentionPolicy } = await import('../../src/retention/policy.js');
  expect(() => RetentionPolicy.from({ snapshotDays: 0 })).toThrow(/snapshotDays/);
  expect(() => RetentionPolicy.from({ adoptionWindowDays: Number.NaN })).toThrow(/adoptionWindowDays/);
  const policy = RetentionPolicy.from({ adoptionWindowDays: 0.5 });
  expect(policy.adoptionWindowMs).toBe(43_200_000);
  expect(policy.snapshotMs).toBe(7 * 86_400_000);
});
