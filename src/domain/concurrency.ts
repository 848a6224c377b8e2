import type { StoreTransaction } from '../store/store.js';

/**
 * Runs `work` over `items` with at most `limit` in flight. Each item's steps are still separate store
 * transactions; running several at once lets the store fold their commits into one durable write (one
 * fsync) instead of paying one per item, which is what bounds a pass's duration at scale.
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}

/**
 * A gate that runs at most `limit` of the calls given to it at once; the others wait, in the order they came.
 * For work of one kind inside lanes of another (a pass's launches inside its planning lanes).
 */
export function concurrencyGate(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (work) => {
    if (running < Math.max(1, limit)) running++;
    else await new Promise<void>((enter) => waiting.push(enter));
    try {
      return await work();
    } finally {
      // The place passes straight to the next waiter, so none can be overtaken by a newcomer.
      const next = waiting.shift();
      if (next === undefined) running--;
      else next();
    }
  };
}

/** What {@link busyElsewhere} needs of the engine: where it counts the work it passed over. */
export interface PassOverCounter {
  passedOver: number;
}

/**
 * Whether another engine sharing the store holds the record right now (see `StoreTransaction.lockUnlessBusy`):
 * then the caller skips it, and the count makes the engine look again shortly instead of at its next due
 * instant, so work one engine passed over is never left waiting for a wake-up that nothing schedules.
 */
export async function busyElsewhere(
  counter: PassOverCounter,
  tx: StoreTransaction,
  kind: string,
  id: string,
): Promise<boolean> {
  if (tx.lockUnlessBusy === undefined || (await tx.lockUnlessBusy(kind, id))) return false;
  counter.passedOver += 1;
  return true;
}
