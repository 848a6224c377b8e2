import { describe, expect, test } from 'vitest';
import { CommitQueue, type QueuedTransaction } from '../../src/store/commit-queue.js';
import { StoreClosedError, type StoreTransaction } from '../../src/store/store.js';

/** A queue whose batches answer each job with its body's result and record their sizes. */
function recordingQueue(maxGroup: number, maxInFlight?: number) {
  const batches: number[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const queue = new CommitQueue(
    maxGroup,
    async (batch: QueuedTransaction[]) => {
      batches.push(batch.length);
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      for (const job of batch) {
        try {
          job.resolve(await job.body({} as StoreTransaction));
        } catch (error) {
          job.reject(error);
        }
      }
      inFlight--;
    },
    maxInFlight,
  );
  return { queue, batches, mostInFlight: () => mostInFlight };
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

  test('with one batch in flight, a batch whose body waits holds every later one back', async () => {
    const { queue, batches, mostInFlight } = recordingQueue(1);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const first = queue.enqueue(async () => (await held, order.push('first')));
    await Promise.resolve();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const second = queue.enqueue(() => order.push('second'));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect(batches).toEqual([1, 1]);
    expect(mostInFlight()).toBe(1);
  });

  test('with several batches in flight, later batches are written while an earlier one waits, up to the bound', async () => {
    const { queue, batches, mostInFlight } = recordingQueue(2, 3);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const first = queue.enqueue(async () => (await held, order.push('first')));
    await new Promise<void>((resolve) => setImmediate(resolve));
    const free = [queue.enqueue(() => order.push('free-0')), queue.enqueue(() => order.push('free-1'))];
    await Promise.all(free);
    // A batch behind the waiting one was written meanwhile.
    expect(order).toEqual(['free-0', 'free-1']);
    // Batches that wait too fill the places; the next waits for one.
    const waiting = Array.from({ length: 6 }, (_, i) => queue.enqueue(async () => (await held, order.push(`w-${i}`))));
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(batches).toEqual([1, 2, 2, 2]);
    expect(mostInFlight()).toBe(3);
    release();
    await Promise.all([first, ...waiting]);
    expect(batches).toEqual([1, 2, 2, 2, 2]);
    expect(order.slice(2).sort()).toEqual(['first', 'w-0', 'w-1', 'w-2', 'w-3', 'w-4', 'w-5']);
    await queue.close();
  });

  test('close waits for every batch in flight', async () => {
    const { queue } = recordingQueue(1, 4);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const jobs = [queue.enqueue(async () => (await held, 'held')), queue.enqueue(() => 'free')];
    let closed = false;
    const closing = queue.close().then(() => (closed = true));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    release();
    await closing;
    await expect(Promise.all(jobs)).resolves.toEqual(['held', 'free']);
  });
});
