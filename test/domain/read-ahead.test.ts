import { expect, test } from 'vitest';
import { dispatchCandidates } from '../../src/dispatcher/dispatch-candidates.js';
import { readAhead } from '../../src/domain/read-ahead.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { StoreReader } from '../../src/store/store.js';

/** A reader that counts its record reads, with `getMany` as the PostgreSQL store has it, or without. */
function counting(reader: StoreReader, withMany: boolean) {
  const counts = { get: 0, getMany: 0, asked: [] as number[] };
  const wrapped: StoreReader = Object.create(reader);
  wrapped.get = (kind, id) => (counts.get++, reader.get(kind, id));
  wrapped.getMany = withMany
    ? async (kind, ids) => {
        counts.getMany++;
        counts.asked.push(ids.length);
        return (await Promise.all(ids.map((id) => reader.get(kind, id)))).flatMap((r) => r ?? []) as never;
      }
    : undefined;
  return { wrapped, counts };
}

test('read ahead: the records that exist, a page of 256 ids per getMany; nothing where the store has no getMany', async () => {
  const store = new MemoryStore();
  const ids = Array.from({ length: 600 }, (_, i) => `a${String(i).padStart(3, '0')}`);
  await store.transact(async (tx) => {
    for (const id of ids.filter((_, i) => i % 3 !== 0)) await tx.put('attempt', id, { id }, { expectedVersion: null });
  });
  const many = await store.read(async (r) => {
    const { wrapped, counts } = counting(r, true);
    return { found: await readAhead<{ id: string }>(wrapped, 'attempt', ids), counts };
  });
  expect(many.counts).toEqual({ get: 0, getMany: 3, asked: [256, 256, 88] });
  expect([...many.found!.keys()].sort()).toEqual(ids.filter((_, i) => i % 3 !== 0));
  expect(many.found!.get('a001')?.data).toEqual({ id: 'a001' });
  const none = await store.read(async (r) => {
    const { wrapped, counts } = counting(r, false);
    return { found: await readAhead(wrapped, 'attempt', ids), counts };
  });
  expect(none.found).toBeUndefined();
  expect(none.counts.get).toBe(0);
});

const occurrence = (state: string, attributes: Record<string, unknown> = {}) => ({
  snapshot: { value: state, context: {} },
  attributes,
});
const hold = (state: string) => ({ snapshot: { value: state, context: {} }, attributes: {} });

test('dispatch candidates: claimed or dispatching, run not held; the same read at once or one record at a time', async () => {
  const store = new MemoryStore();
  await store.transact(async (tx) => {
    const put = (kind: string, id: string, data: unknown) => tx.put(kind, id, data, { expectedVersion: null });
    await put('occurrence', 'o1', occurrence('claimed'));
    await put('occurrence', 'o2', occurrence('dispatching', { activeRunRef: 'r2' }));
    await put('occurrence', 'o3', occurrence('claimed', { activeRunRef: 'r3' }));
    await put('run-hold', 'r3', hold('held'));
    await put('occurrence', 'o4', occurrence('claimed', { activeRunRef: 'r4' }));
    await put('run-hold', 'r4', hold('ended'));
    await put('occurrence', 'o5', occurrence('planned'));
    // A store written before the hold had a machine: the flag holds the run while it has no hold record.
    await put('occurrence', 'o6', occurrence('claimed', { activeRunRef: 'r6', held: true }));
    await put('occurrence', 'o7', occurrence('succeeded', { activeRunRef: 'r7' }));
  });
  const ids = ['o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8'];
  const both = await store.read(async (r) => {
    const many = counting(r, true);
    const one = counting(r, false);
    return {
      many: [...(await dispatchCandidates(many.wrapped, ids))].sort(),
      one: [...(await dispatchCandidates(one.wrapped, ids))].sort(),
      counts: { many: many.counts, one: one.counts.get },
    };
  });
  expect(both.many).toEqual(['o1', 'o2', 'o4']);
  expect(both.one).toEqual(both.many);
  // At once: the occurrences, then the holds of the live ones' runs (r2, r3, r4, r6). One by one: 8 + 4 gets.
  expect(both.counts.many).toEqual({ get: 0, getMany: 2, asked: [8, 4] });
  expect(both.counts.one).toBe(12);
});
