import { describe, expect, test } from 'vitest';
import { CommitQueue, type QueuedTransaction } from '../../src/store/commit-queue.js';
import { StoreClosedError, type StoreTransaction } from '../../src/store/store.js';

/** A queue whose batches answer each job with its body's result and record their sizes. */
function recordingQueue(maxGroup: number) {
  const batches: number[] = [];
  const queue = new CommitQueue(maxGroup, async (batch: QueuedTransaction[]) => {
    batches.push(batch.length);
    for (const job of batch) {
      try {
        job.resolve(await job.body({} as StoreTransaction));
      } catch (error) {
        job.reject(error);
      }
    }
  });
  return { queue, batches };
}

describe('group commit queue', () => {
  test('transactions queued together share a batch, in order, at most maxGroup each', async () => {
    const { queue, batches } = recordingQueue(4);
    const order: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => queue.enqueue(() => (order.push(i), i * 2))),
    );
    expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i * 2));
    expect(order).toEqual([...Array(10).keys()]);
    expect(batches).toEqual([4, 4, 2]);
  });

  test('callers answered by a batch who queue again a few continuations later share the next batch', async () => {
    const { queue, batches } = recordingQueue(64);
    const workers = 8;
    const rounds = 3;
    // As an engine pass phase does: each worker awaits its step, then a few promise hops before the next.
    const worker = async () => {
      for (let round = 0; round < rounds; round++) {
        await queue.enqueue(() => round);
        await Promise.resolve();
        await Promise.resolve();
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    expect(batches).toEqual(Array(rounds).fill(workers));
  });

  test('a closed queue refuses new transactions and answers every queued one first', async () => {
    const { queue } = recordingQueue(2);
    const queued = [queue.enqueue(() => 'a'), queue.enqueue(() => 'b'), queue.enqueue(() => 'c')];
    await queue.close();
    await expect(Promise.all(queued)).resolves.toEqual(['a', 'b', 'c']);
    await expect(queue.enqueue(() => 'd')).rejects.toBeInstanceOf(StoreClosedError);
  });
});
