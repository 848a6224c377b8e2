import { describe, expect, test } from 'vitest';
import type { LiveWork, Store, StoreReader } from '../../src/store/store.js';
import type { StoreHarness } from './store-conformance.js';

/** An entity record as the engine writes it: what the stores' index of live work reads. */
function entity(state: string, fields: { automationId?: string; scheduledFor?: string; lease?: string } = {}) {
  return {
    snapshot: {
      value: state,
      context: {
        ...(fields.automationId === undefined ? {} : { automationId: fields.automationId }),
        fence: { generation: 1, leaseExpiresAt: fields.lease ?? null },
        deadlineAt: null,
      },
    },
    attributes: {
      ...(fields.scheduledFor === undefined ? {} : { scheduledFor: fields.scheduledFor }),
      automationRevision: 2,
    },
  };
}

const ids = (works: LiveWork[]) => works.map((w) => w.id);
const live = (r: StoreReader, automationId?: string) =>
  r.liveWork('occurrence', automationId === undefined ? {} : { automationId });

/** {@link StoreReader.liveWork} on every store: the index follows commits, rollbacks and reopening. */
export function describeLiveWorkConformance(name: string, harness: StoreHarness): void {
  describe(`${name} store: the index of live work`, () => {
    test('lists the records not terminal, with their fields, by kind and by automation', async () => {
      let store: Store = await harness.create();
      try {
        await store.transact(async (tx) => {
          const due = '2026-01-01T09:00:00.000Z';
          await tx.put('occurrence', 'o2', entity('planned', { automationId: 'a', scheduledFor: due }), {
            expectedVersion: null,
          });
          await tx.put('occurrence', 'o1', entity('claimed', { automationId: 'b', lease: due }), {
            expectedVersion: null,
          });
          await tx.put('occurrence', 'o3', entity('succeeded', { automationId: 'a' }), {
            expectedVersion: null,
            terminal: true,
          });
          await tx.put('attempt', 't1', entity('observing'), { expectedVersion: null });
          await tx.put('definition', 'a', entity('active', { automationId: 'a' }), { expectedVersion: null });
          // Inside the transaction, its own writes are already indexed.
          expect(ids(await live(tx))).toEqual(['o1', 'o2']);
        });
        const expected = {
          id: 'o2',
          state: 'planned',
          automationId: 'a',
          scheduledFor: '2026-01-01T09:00:00.000Z',
          notBefore: null,
          leaseExpiresAt: null,
          deadlineAt: null,
          automationRevision: 2,
          claimedBy: null,
          launchedBy: null,
        };
        const check = async (s: Store) =>
          s.read(async (r) => {
            expect(ids(await live(r))).toEqual(['o1', 'o2']);
            expect(await live(r, 'a')).toEqual([expected]);
            expect((await live(r, 'b'))[0]?.leaseExpiresAt).toBe('2026-01-01T09:00:00.000Z');
            expect(await live(r, 'c')).toEqual([]);
            expect(ids(await r.liveWork('attempt'))).toEqual(['t1']);
          });
        await check(store);
        if (harness.reopen !== undefined) {
          store = await harness.reopen(store);
          await check(store);
        }
      } finally {
        await store.close();
      }
    });

    test('follows transitions, sealing and removal; a rolled-back transaction leaves it as it was', async () => {
      const store = await harness.create();
      try {
        await store.transact((tx) =>
          tx.put('occurrence', 'o1', entity('planned', { automationId: 'a' }), { expectedVersion: null }),
        );
        await expect(
          store.transact(async (tx) => {
            await tx.put('occurrence', 'o1', entity('claimed', { automationId: 'b' }), { expectedVersion: 1 });
            expect(ids(await live(tx, 'a'))).toEqual([]);
            expect((await live(tx, 'b')).map((w) => w.state)).toEqual(['claimed']);
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect((await store.read((r) => live(r, 'a'))).map((w) => w.state)).toEqual(['planned']);
        await store.transact((tx) =>
          tx.put('occurrence', 'o1', entity('failed', { automationId: 'a' }), { expectedVersion: 1, terminal: true }),
        );
        await store.transact((tx) =>
          tx.put('occurrence', 'o2', entity('eligible', { automationId: 'a' }), { expectedVersion: null }),
        );
        expect(ids(await store.read((r) => live(r, 'a')))).toEqual(['o2']);
        await store.transact((tx) => tx.delete('occurrence', 'o2', 1));
        expect(await store.read((r) => live(r))).toEqual([]);
      } finally {
        await store.close();
      }
    });

    test('leaves out what the engines named hold: occurrences they claimed, attempts they launched', async () => {
      const store = await harness.create();
      try {
        // One live occurrence per automation: the claimed ones are of two automations.
        const held = (state: string, claimedBy: string | null, workerId?: string, automationId = 'a') => {
          const record = entity(state, { automationId });
          return {
            ...record,
            snapshot: { ...record.snapshot, context: { ...record.snapshot.context, fence: { claimedBy } } },
            attributes: {
              ...record.attributes,
              ...(workerId === undefined ? {} : { workerCorrelation: { workerId } }),
            },
          };
        };
        await store.transact(async (tx) => {
          await tx.put('occurrence', 'o1', held('claimed', 'e1'), { expectedVersion: null });
          await tx.put('occurrence', 'o2', held('claimed', 'e2', undefined, 'b'), { expectedVersion: null });
          await tx.put('occurrence', 'o3', held('planned', null), { expectedVersion: null });
          await tx.put('attempt', 't1', held('started', null, 'e1'), { expectedVersion: null });
          await tx.put('attempt', 't2', held('started', null, 'e3'), { expectedVersion: null });
          await tx.put('attempt', 't3', held('adopted', null), { expectedVersion: null });
        });
        await store.read(async (r) => {
          expect(ids(await r.liveWork('occurrence', { exceptHeldBy: ['e1', 'e3'] }))).toEqual(['o2', 'o3']);
          expect(ids(await r.liveWork('occurrence', { automationId: 'a', exceptHeldBy: ['e2'] }))).toEqual([
            'o1',
            'o3',
          ]);
          expect(ids(await r.liveWork('occurrence', { automationId: 'a', exceptHeldBy: ['e1'] }))).toEqual(['o3']);
          expect(ids(await r.liveWork('occurrence', { exceptHeldBy: [] }))).toEqual(['o1', 'o2', 'o3']);
          expect(ids(await r.liveWork('attempt', { exceptHeldBy: ['e1', 'e2'] }))).toEqual(['t2', 't3']);
        });
      } finally {
        await store.close();
      }
    });
  });
}
