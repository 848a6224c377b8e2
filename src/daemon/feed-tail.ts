import { ContractError } from '../contract/errors.js';
import type { StoreReader } from '../store/store.js';

/** At most this many recent entries a page may ask to start with. */
export const MAX_RECENT = 200;
const DEFAULT_RECENT = 50;

const hasAfter = async (reader: StoreReader, position: number): Promise<boolean> =>
  (await reader.readFeed({ after: position, limit: 1 })).length > 0;

/**
 * The global position of the feed's last entry (-1 when the feed is empty), found with one-entry reads (an
 * exponential then a binary search over "is there an entry after p"), so the feed is never read whole.
 */
export async function lastFeedPosition(reader: StoreReader): Promise<number> {
  if (!(await hasAfter(reader, -1))) return -1;
  let low = -1;
  let high = 1024;
  while (await hasAfter(reader, high)) {
    low = high;
    high *= 2;
  }
  // Invariant: an entry lies after `low`, none after `high`.
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (await hasAfter(reader, middle)) low = middle;
    else high = middle;
  }
  return high;
}

/** `recent` of the query string: 0–200, default 50. */
export function parseRecent(query: Record<string, unknown>): number {
  const text = query.recent;
  if (text === undefined || text === '') return DEFAULT_RECENT;
  if (typeof text !== 'string' || !/^\d{1,3}$/.test(text) || Number(text) > MAX_RECENT)
    throw new ContractError('VALIDATION_FAILED', `recent must be a whole number 0–${MAX_RECENT}`, { field: 'recent' });
  return Number(text);
}

/**
 * Where a live view of the feed starts: after this position lie (about) the last `recent` entries. The page's
 * changefeed follows the stream from there instead of replaying the store's whole history.
 */
export async function feedTail(reader: StoreReader, recent: number): Promise<{ after: number; last: number }> {
  const last = await lastFeedPosition(reader);
  return { after: Math.max(-1, last - recent), last };
}
