import { describe, expect, test } from 'vitest';
import { StoreConflictError, TerminalRecordError, type Store } from '../../src/store/store.js';
import type { StoreHarness } from './store-conformance.js';

const entity = (state: string, step: number) => ({ snapshot: { value: state, context: { step } }, attributes: {} });

async function using(harness: StoreHarness, body: (store: Store) => Promise<void>): Promise<void> {
  const store = await harness.create();
  try {
    await body(store);
  } finally {
    await store.close();
  }
}

/**
 * A transaction that writes one record many times (as an occurrence moves through its machine in one step)
 * behaves as if each write were stored at once, whether a store sends each write or only the last.
 */
export function describeStagedWritesConformance(name: string, harness: StoreHarness): void {
  describe(`${name} store: many writes of one record in one transaction`, () => {
    test('read back at the last state and version, inside the transaction and after commit', async () => {
      await using(harness, async (store) => {
        await store.transact(async (tx) => {
          let record = await tx.put('occurrence', 'o1', entity('planned', 0), { expectedVersion: null });
          for (let step = 1; step <= 5; step++) {
            expect(await tx.get('occurrence', 'o1')).toEqual(record);
            record = await tx.put('occurrence', 'o1', entity('claimed', step), { expectedVersion: record.version });
          }
          expect(await tx.version('occurrence', 'o1')).toBe(6);
          expect((await tx.versions('occurrence')).map((v) => [v.id, v.version])).toEqual([['o1', 6]]);
          expect((await tx.liveWork('occurrence')).map((w) => [w.id, w.state])).toEqual([['o1', 'claimed']]);
          await tx.put('occurrence', 'o1', entity('succeeded', 6), { expectedVersion: 6, terminal: true });
          expect((await tx.liveWork('occurrence')).map((w) => w.id)).toEqual([]);
        });
        const stored = await store.read((r) => r.get('occurrence', 'o1'));
        expect(stored).toMatchObject({ version: 7, terminal: true, data: entity('succeeded', 6) });
      });
    });

    test('a put the transaction can judge is refused at the put, and the transaction may go on', async () => {
      await using(harness, async (store) => {
        await store.transact((tx) => tx.put('run', 'sealed', { n: 1 }, { expectedVersion: null, terminal: true }));
        await store.transact(async (tx) => {
          const sealed = await tx.get('run', 'sealed');
          await expect(tx.put('run', 'sealed', { n: 2 }, { expectedVersion: sealed!.version })).rejects.toBeInstanceOf(
            TerminalRecordError,
          );
          expect(await tx.get('run', 'absent')).toBeUndefined();
          await expect(tx.put('run', 'absent', { n: 2 }, { expectedVersion: 3 })).rejects.toBeInstanceOf(
            StoreConflictError,
          );
          const fresh = await tx.put('run', 'fresh', { n: 1 }, { expectedVersion: null });
          await expect(tx.put('run', 'fresh', { n: 2 }, { expectedVersion: null })).rejects.toBeInstanceOf(
            StoreConflictError,
          );
          await tx.put('run', 'fresh', { n: 3 }, { expectedVersion: fresh.version });
        });
        const runs = await store.read((r) => r.list('run'));
        expect(runs.map((r) => [r.id, r.version, r.data])).toEqual([
          ['fresh', 2, { n: 3 }],
          ['sealed', 1, { n: 1 }],
        ]);
      });
    });

    test('a stale write commits nothing of its transaction; the others of a group commit', async () => {
      await using(harness, async (store) => {
        await store.transact((tx) => tx.put('attempt', 'a2', { n: 0 }, { expectedVersion: null }));
        const group = Promise.allSettled(
          ['a1', 'a2', 'a3'].map((id) =>
            store.transact(async (tx) => {
              await tx.append(`attempt/${id}`, { id });
              await tx.put('attempt', id, { n: 1 }, { expectedVersion: id === 'a2' ? 7 : null });
              await tx.put('attempt', id, { n: 2 }, { expectedVersion: id === 'a2' ? 8 : 1 });
            }),
          ),
        );
        const abandoned = store.transact(async (tx) => {
          await tx.put('attempt', 'a4', { n: 1 }, { expectedVersion: null });
          throw new Error('abandoned after its write');
        });
        const after = store.transact((tx) => tx.put('attempt', 'a5', { n: 1 }, { expectedVersion: null }));
        await expect(abandoned).rejects.toThrow('abandoned after its write');
        await after;
        const outcomes = await group;
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
        const state = await store.read(async (r) => ({
          heads: await Promise.all(['a1', 'a2', 'a3'].map((id) => r.head(`attempt/${id}`))),
          attempts: (await r.list<{ n: number }>('attempt')).map((a) => [a.id, a.version, a.data.n]),
        }));
        expect(state).toEqual({
          heads: [1, 0, 1],
          attempts: [
            ['a1', 2, 2],
            ['a2', 1, 0],
            ['a3', 2, 2],
            ['a5', 1, 1],
          ],
        });
      });
    });

    test('a record written then removed in one transaction is gone; one removed then written is back', async () => {
      await using(harness, async (store) => {
        await store.transact(async (tx) => {
          await tx.put('outbox', 'kept', { n: 0 }, { expectedVersion: null });
          await tx.put('outbox', 'moved', { n: 0 }, { expectedVersion: null });
        });
        await store.transact(async (tx) => {
          const once = await tx.put('outbox', 'gone', { n: 1 }, { expectedVersion: null });
          const twice = await tx.put('outbox', 'gone', { n: 2 }, { expectedVersion: once.version });
          await tx.delete('outbox', 'gone', twice.version);
          expect(await tx.get('outbox', 'gone')).toBeUndefined();
          const moved = await tx.put('outbox', 'moved', { n: 1 }, { expectedVersion: 1 });
          await expect(tx.delete('outbox', 'moved', 1)).rejects.toBeInstanceOf(StoreConflictError);
          await tx.delete('outbox', 'moved', moved.version);
          await tx.delete('outbox', 'kept', 1);
          await tx.put('outbox', 'kept', { n: 1 }, { expectedVersion: null });
        });
        const outbox = await store.read((r) => r.list('outbox'));
        expect(outbox.map((r) => [r.id, r.version, r.data])).toEqual([['kept', 1, { n: 1 }]]);
      });
    });

    test("data handed over reads back equal and frozen; data that is not plain JSON is copied, the caller's left be", async () => {
      await using(harness, async (store) => {
        const plain = { snapshot: { value: 'planned', context: { step: 1, tags: ['a'] } }, attributes: { n: 1 } };
        const expected = structuredClone(plain);
        const loose = { at: new Date(0), gone: undefined, nested: { zero: -0 } };
        await store.transact(async (tx) => {
          const kept = await tx.put('occurrence', 'plain', plain, { expectedVersion: null, handOver: true });
          expect(kept.data).toStrictEqual(expected);
          expect(await tx.get('occurrence', 'plain')).toStrictEqual(kept);
          expect(Object.isFrozen(kept) && Object.isFrozen(kept.data.snapshot.context.tags)).toBe(true);
          const copied = await tx.put('occurrence', 'loose', loose, { expectedVersion: null, handOver: true });
          expect(copied.data).not.toBe(loose);
          expect(Object.isFrozen(copied.data) && !Object.isFrozen(loose) && !Object.isFrozen(loose.nested)).toBe(true);
          const again = { ...plain, attributes: { n: 2 } };
          await tx.put('occurrence', 'plain', again, { expectedVersion: kept.version, handOver: true });
        });
        const stored = await store.read((r) => Promise.all(['loose', 'plain'].map((id) => r.get('occurrence', id))));
        expect(stored.map((r) => [r?.id, r?.version])).toStrictEqual([
          ['loose', 1],
          ['plain', 2],
        ]);
        expect(stored[1]!.data).toStrictEqual({ ...expected, attributes: { n: 2 } });
        expect(JSON.parse(JSON.stringify(stored[0]!.data))).toStrictEqual(JSON.parse(JSON.stringify(loose)));
      });
    });

    test("an entry's data handed over reads back equal and frozen; without handOver or not plain, the caller's is left be", async () => {
      await using(harness, async (store) => {
        const plain = { kind: 'occurrence.planned', payload: { slot: 1, tags: ['a'] } };
        const expected = structuredClone(plain);
        const loose = { at: new Date(0), nested: { zero: -0 } };
        const mine = { kind: 'mine', payload: { n: 1 } };
        await store.transact(async (tx) => {
          await tx.append('occurrence/handed', plain, 0, { handOver: true });
          await tx.append('occurrence/handed', loose, 1, { handOver: true });
          await tx.append('occurrence/handed', mine, 2);
          const entries = await tx.readLog<typeof plain>('occurrence/handed');
          expect(entries[0]!.data).toStrictEqual(expected);
          expect(Object.isFrozen(entries[0]!.data) && Object.isFrozen(entries[0]!.data.payload.tags)).toBe(true);
          expect(entries[1]!.data).not.toBe(loose);
          expect(entries[2]!.data).not.toBe(mine);
        });
        // Not plain, or not handed over: the caller's objects stay theirs to change.
        expect(Object.isFrozen(loose) || Object.isFrozen(loose.nested) || Object.isFrozen(mine)).toBe(false);
        mine.payload.n = 2;
        const stored = await store.read((r) => r.readLog('occurrence/handed'));
        // JSON forms: the memory store keeps a structured clone of data that is not plain (a Date stays one).
        expect(stored.map((e) => JSON.parse(JSON.stringify(e.data)) as unknown)).toStrictEqual([
          expected,
          JSON.parse(JSON.stringify(loose)) as unknown,
          { kind: 'mine', payload: { n: 1 } },
        ]);
      });
    });
  });
}
