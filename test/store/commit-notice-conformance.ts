import { describe, expect, test } from 'vitest';
import type { Store, StoreTransaction } from '../../src/store/store.js';
import { using, type StoreHarness } from './store-harness.js';

/** Every notice `store` gives its commit listeners while `body` runs: whether each commit was routine. */
async function noticesDuring(store: Store, body: () => Promise<unknown>): Promise<boolean[]> {
  const notices: boolean[] = [];
  const unsubscribe = store.onCommit((source, routine) => {
    if (source !== 'outside') notices.push(routine === true);
  });
  try {
    await body();
  } finally {
    unsubscribe();
  }
  return notices;
}

const write = (tx: StoreTransaction, id: string) => tx.put('definition', id, { id }, { expectedVersion: null });

/**
 * Queues the bodies in one turn of the event loop behind a transaction that writes nothing, so a store that groups
 * queued transactions writes them as one group (a store that does not, one after another).
 */
async function queuedTogether(store: Store, bodies: Array<(tx: StoreTransaction) => Promise<unknown>>) {
  let open!: () => void;
  const held = new Promise<void>((resolve) => (open = resolve));
  const holder = store.transact(() => held);
  const queued = bodies.map((body) =>
    store.transact(body).then(
      () => 'committed',
      (error: unknown) => (error as Error).message,
    ),
  );
  open();
  await holder;
  return Promise.all(queued);
}

/** What a store tells its commit listeners of routine commits (`StoreTransaction.routine`). */
export function describeCommitNoticeConformance(name: string, harness: StoreHarness): void {
  describe(`${name} store commit notices`, () => {
    test('a commit whose writing transactions all said routine is heard as routine, any other is not', async () => {
      await using(await harness.create(), async (store) => {
        const notices = await noticesDuring(store, async () => {
          await store.transact(async (tx) => {
            tx.routine!();
            await write(tx, 'a');
          });
          await store.transact((tx) => write(tx, 'b'));
        });
        expect(notices).toEqual([true, false]);
      });
    });

    test('one transaction that did not say routine makes its whole group heard as not routine', async () => {
      await using(await harness.create(), async (store) => {
        const routine = async (tx: StoreTransaction, id: string) => {
          tx.routine!();
          await write(tx, id);
        };
        const notices = await noticesDuring(store, () =>
          queuedTogether(store, [(tx) => routine(tx, 'a'), (tx) => write(tx, 'b'), (tx) => routine(tx, 'c')]),
        );
        // One notice per group: one for all three where the store groups them, three where it does not.
        expect(notices).toContain(false);
        expect(notices.filter((heard) => heard)).toHaveLength(notices.length - 1);
      });
    });

    test('a routine transaction that rolled back leaves no mark on the others, one that only read none', async () => {
      await using(await harness.create(), async (store) => {
        const notices = await noticesDuring(store, async () => {
          const outcomes = await queuedTogether(store, [
            async (tx) => {
              tx.routine!();
              await write(tx, 'a');
              throw new Error('rolled back');
            },
            (tx) => write(tx, 'b'),
          ]);
          expect(outcomes).toEqual(['rolled back', 'committed']);
          await queuedTogether(store, [
            (tx) => tx.get('definition', 'b'),
            async (tx) => {
              tx.routine!();
              await write(tx, 'c');
            },
          ]);
          // The other way round: a plain transaction that rolled back does not count against a routine one.
          await queuedTogether(store, [
            async (tx) => {
              tx.routine!();
              await write(tx, 'd');
            },
            async (tx) => {
              await write(tx, 'e');
              throw new Error('rolled back');
            },
          ]);
        });
        expect(notices).toEqual([false, true, true]);
      });
    });
  });
}
