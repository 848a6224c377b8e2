import { storeStream, type StreamRef } from '../changefeed/event-envelope.js';
import type { SubscriberCursor } from '../observability/run-doctor.js';

/** One open changefeed stream, as the daemon tracks it while it serves the subscriber. */
export interface SubscriberHandle {
  readonly subscriberId: string;
  /** The entry at `feedPosition` (with `cursor`, its sequence on a stream subscription) reached the socket. */
  delivered(feedPosition: number, cursor: number): void;
  /** The subscriber left (or the daemon stopped): it is no longer reported. */
  close(): void;
}

interface Open {
  stream: StreamRef;
  position: number;
  cursor: number;
}

/**
 * The daemon's live changefeed subscribers and how far each has been delivered, for the doctor's
 * events.cursor-lag. A feed subscriber is judged by its global position; a subscriber of one stream by the
 * sequence it reached on that stream, so commits to other streams never make it look behind.
 *
 * @example
 * ```ts
 * const subscribers = new SubscriberRegistry();
 * const handle = subscribers.open({ kind: 'feed', id: 'all' }, -1);
 * handle.delivered(0, 0);
 * subscribers.list(); // [{ subscriberId: 'sse-1', position: 0 }]
 * handle.close();
 * ```
 */
export class SubscriberRegistry {
  private readonly open_ = new Map<string, Open>();
  private opened = 0;

  /** Tracks a new subscriber whose stream starts after `after` (its cursor: a position, or a sequence). */
  open(stream: StreamRef, after: number): SubscriberHandle {
    const subscriberId = `sse-${++this.opened}`;
    const entry: Open = { stream, position: stream.kind === 'feed' ? after : -1, cursor: after };
    this.open_.set(subscriberId, entry);
    return {
      subscriberId,
      delivered: (feedPosition, cursor) => {
        entry.position = Math.max(entry.position, feedPosition);
        entry.cursor = Math.max(entry.cursor, cursor);
      },
      close: () => void this.open_.delete(subscriberId),
    };
  }

  /** Every open subscriber's cursor, in the shape the doctor judges. */
  list(): SubscriberCursor[] {
    return [...this.open_].map(([subscriberId, { stream, position, cursor }]) =>
      stream.kind === 'feed'
        ? { subscriberId, position }
        : { subscriberId, position, stream: storeStream(stream), sequence: cursor },
    );
  }
}
