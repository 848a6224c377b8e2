import { expect, test } from 'vitest';
import { REREAD_PAGE, VersionedRecords } from '../../src/domain/versioned-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { StoreReader } from '../../src/store/store.js';

type Cursor = { id: string; version: number; lastSlot: string };
const cursors = () =>
  new VersionedRecords<Cursor, { lastSlot: string }>('plan-cursor', (r) => ({
    id: r.id,
    version: r.version,
    lastSlot: r.data.lastSlot,
  }));

/** A reader that counts its reads of whole records, with `getMany` as the PostgreSQL store has it, or without. */
function counting(reader: StoreReader, withMany: boolean) {
  const counts = { get: 0, getMany: 0, list: 0 };
  const wrapped: StoreReader = Object.create(reader);
  wrapped.get = (kind, id) => (counts.get++, reader.get(kind, id));
  wrapped.list = (kind, options) => (counts.list++, reader.list(kind, options));
  wrapped.getMany = withMany
    ? async (kind, ids) => {
        counts.getMany++;
        return (await Promise.all(ids.map((id) => reader.get(kind, id)))).flatMap((r) => r ?? []) as never;
      }
    : undefined;
  return { wrapped, counts };
}

test('records moved by another writer are read again in one getMany per page where the store has it', async () => {
  const store = new MemoryStore();
  const ids = Array.from({ length: REREAD_PAGE + 20 }, (_, i) => `c${String(i).padStart(4, '0')}`);
  await store.transact(async (tx) => {
    for (const id of ids) await tx.put('plan-cursor', id, { lastSlot: 'a' }, { expectedVersion: null });
  });
  const withMany = cursors();
  const without = cursors();
  /** Each directory brought current in one read: the one whose reader has getMany, and the one without. */
  const bothCurrent = () =>
    store.read(async (r) => {
      const many = counting(r, true);
      const singles = counting(r, false);
      return {
        many: [await withMany.current(many.wrapped), many.counts] as const,
        singles: [await without.current(singles.wrapped), singles.counts] as const,
      };
    });
  const fresh = await bothCurrent();
  expect(fresh.many[0]).toEqual(fresh.singles[0]);
  expect(fresh.many[1]).toEqual({ get: 0, getMany: 2, list: 0 });
  // Another writer moves some and removes one: only those are read again, and the removed one is forgotten.
  await store.transact(async (tx) => {
    for (const id of ids.slice(0, 30)) await tx.put('plan-cursor', id, { lastSlot: 'b' }, { expectedVersion: 1 });
    await tx.delete('plan-cursor', ids.at(-1)!, 1);
  });
  const moved = await bothCurrent();
  expect(moved.many[0]).toEqual(moved.singles[0]);
  expect(moved.many[0]).toHaveLength(ids.length - 1);
  expect(moved.many[0].filter((c) => c.lastSlot === 'b').map((c) => c.id)).toEqual(ids.slice(0, 30));
  expect(moved.many[1]).toEqual({ get: 0, getMany: 1, list: 0 });
  expect(moved.singles[1]).toEqual({ get: 30, getMany: 0, list: 0 });
});
