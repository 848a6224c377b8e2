import type { Changefeed } from '../changefeed/changefeed.js';
import type { EventEnvelope, StreamRef } from '../changefeed/event-envelope.js';
import { readEventFeed, readEventLog } from '../changefeed/stored-event.js';
import type { LogEntry, Store } from '../store/store.js';

/** One changefeed entry with the cursor `--after` takes: the global position on the feed, else the sequence. */
export interface FollowedEvent {
  position: number;
  event: EventEnvelope;
}

/** A followed entry with its global feed position too (equal to `position` on the feed). */
export interface FeedFollowedEvent extends FollowedEvent {
  feedPosition: number;
}

const PAGE = 100;
export const GLOBAL_FEED: StreamRef = { kind: 'feed', id: 'all' };

function entriesAfter(store: Store, stream: StreamRef, after: number): Promise<Array<LogEntry<EventEnvelope>>> {
  return store.read((reader) =>
    stream.kind === 'feed'
      ? readEventFeed(reader, { after, limit: PAGE })
      : readEventLog(reader, stream, { after, limit: PAGE }),
  );
}

/**
 * Live delivery with cursors: every entry after `after`, then each one later commits append, until `signal`
 * aborts. The cursor is checked once by the changefeed first, so a stream that does not exist as named, or a
 * cursor retention has passed, is refused with its typed error (VALIDATION_FAILED, CURSOR_EXPIRED) instead of
 * tailing nothing. Like {@link Changefeed.subscribe}, the wake-up is armed before each read, so a commit
 * between the read and the wait is never missed.
 *
 * @example
 * ```ts
 * for await (const { position, event } of follow(feed, store, GLOBAL_FEED, { after: -1, signal }))
 *   show(position, event);
 * ```
 */
export async function* follow(
  changefeed: Changefeed,
  store: Store,
  stream: StreamRef,
  options: { after?: number; signal?: AbortSignal } = {},
): AsyncGenerator<FeedFollowedEvent> {
  let after = options.after !== undefined && options.after >= 0 ? options.after : -1;
  await changefeed.read(stream, { after, limit: 1 });
  const signal = options.signal;
  const aborted = () => signal?.aborted === true;
  while (!aborted()) {
    let wake: () => void = () => undefined;
    const committed = new Promise<void>((resolve) => (wake = resolve));
    const unsubscribe = store.onCommit(() => wake());
    signal?.addEventListener('abort', wake, { once: true });
    try {
      const entries = await entriesAfter(store, stream, after);
      for (const entry of entries) {
        after = stream.kind === 'feed' ? entry.position : entry.sequence;
        yield { position: after, feedPosition: entry.position, event: entry.data };
        if (aborted()) return;
      }
      if (entries.length === 0) await committed;
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', wake);
    }
  }
}
