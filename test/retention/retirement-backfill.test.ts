import { expect, test } from 'vitest';
import { KINDS } from '../../src/domain/records.js';
import { RETIRE_QUEUE_KIND } from '../../src/domain/retention-queue.js';
import { harness, type Harness } from '../support/engine-harness.js';

async function tickAt(h: Harness, instant: string) {
  h.clock.set(new Date(instant));
  const report = await h.engine.tick();
  expect(report.errors).toEqual([]);
  h.clock.advance({ minutes: 2 });
  expect((await h.engine.tick()).errors).toEqual([]);
  return report;
}

test('occurrences compacted before retirement existed are queued by the first sweep, then retired', async () => {
  const h = await harness({
    retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
    retention: { sweepEveryMinutes: 0 },
  });
  await tickAt(h, '2026-03-02T09:00:00.000Z');
  const id = (await h.read.occurrences())[0]!.occurrenceId as string;
  expect((await tickAt(h, '2026-03-03T09:30:00.000Z')).compacted).toBe(1);
  // As a store compacted by an older engine holds it: a snapshot stream and a slot key, nothing queued.
  await h.store.transact(async (tx) => {
    for (const r of await tx.list(RETIRE_QUEUE_KIND)) await tx.delete(RETIRE_QUEUE_KIND, r.id, r.version);
    const marker = await tx.get('meta', 'retirement-backfill');
    await tx.delete('meta', 'retirement-backfill', marker!.version);
  });
  const key = `daily@2026-03-02T09:00:00.000Z`;
  await tickAt(h, '2026-03-20T09:30:00.000Z');
  expect(await h.store.read((r) => r.get('meta', 'retirement-backfill'))).toBeDefined();
  expect((await h.read.stream('occurrence', id)).map((e) => e.kind)).toEqual(['feed.snapshot']);
  // Queued a snapshot window after the backfill found it: retired then, with its slot key.
  await tickAt(h, '2026-03-28T09:30:00.000Z');
  expect(await h.read.stream('occurrence', id)).toEqual([]);
  expect(await h.read.stream('run', `run-${id}`)).toEqual([]);
  expect(await h.store.read((r) => r.get(KINDS.occurrenceKey, key))).toBeUndefined();
});
