import { expect, test } from 'vitest';
import { planDueSlots } from '../../src/scheduler/planning.js';
import type { StoreTransaction } from '../../src/store/store.js';
import { harness } from '../support/engine-harness.js';

/** Before the pass's first transaction, pauses the definition behind the pass's back (another engine, say). */
function pauseBeforeFirstTransaction(h: Awaited<ReturnType<typeof harness>>): void {
  const transact = h.store.transact.bind(h.store);
  let sneaked = false;
  h.store.transact = async <R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> => {
    if (!sneaked) {
      sneaked = true;
      await transact(async (tx) => {
        const current = (await tx.get<{ snapshot: { value: string } }>('definition', 'daily'))!;
        await tx.put('definition', 'daily', { ...current.data, snapshot: { ...current.data.snapshot, value: 'paused' } }, { expectedVersion: current.version });
      });
    }
    return transact(body);
  };
}

test('planning uses the definition the pass read only while its version is current', async () => {
  const due = await harness({ start: '2026-03-02T09:00:00.000Z' });
  expect(await planDueSlots(due.engine.services)).toHaveLength(1);

  // The pass reads the definition active; by its planning transaction it is paused: nothing is planned.
  const moved = await harness({ start: '2026-03-02T09:00:00.000Z' });
  pauseBeforeFirstTransaction(moved);
  const errors: Error[] = [];
  expect(await planDueSlots(moved.engine.services, errors)).toEqual([]);
  expect(errors).toEqual([]);
  expect(await moved.read.occurrences()).toEqual([]);
});
