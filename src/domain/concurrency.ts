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
