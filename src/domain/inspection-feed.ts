import type { EventEnvelope } from '../changefeed/event-envelope.js';
import { readEventFeed } from '../changefeed/stored-event.js';
import { StoreClosedError, type Store } from '../store/store.js';
import { InspectionMirror, type InspectionSink, type InspectionStats } from './inspection.js';

/**
 * How often the follower reads the feed when no commit woke it. A commit in this process wakes it at once; the
 * poll is the backstop for commits this process's store does not announce.
 */
export const INSPECTION_POLL_MS = 1000;
const PAGE = 500;

export interface InspectionFeedOptions {
  /** Start after this global feed position (default -1: the whole retained history, so entities appear whole). */
  after?: number;
  pollMs?: number;
  /** Receives a failed read or a sink that threw; the follower goes on (a store closed under it ends it). */
  onError?: (error: Error) => void;
}

/**
 * Follows the store's global changefeed in commit order and feeds every committed event to an
 * {@link InspectionMirror}: the inspector shows what was committed, by any actor, and nothing else. Each event
 * is applied exactly once, in feed order; a sink that throws loses that event's messages, never the order.
 *
 * @example
 * ```ts
 * const feed = new InspectionFeed(store, createInspector(adapter)).start();
 * await feed.caughtUp(); // everything committed so far has been sent
 * await feed.stop();
 * ```
 */
export class InspectionFeed {
  readonly mirror: InspectionMirror;
  private position: number;
  private stopped = false;
  private pending = false;
  private waiting: (() => void) | undefined;
  private idleWaiters: Array<() => void> = [];
  private running: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: Store,
    sink: InspectionSink,
    private readonly options: InspectionFeedOptions = {},
  ) {
    this.mirror = new InspectionMirror(sink);
    this.position = options.after ?? -1;
  }

  /** Starts following (idempotent); returns this. */
  start(): this {
    if (this.running !== undefined || this.stopped) return this;
    this.unsubscribe = this.store.onCommit(() => this.kick());
    this.running = this.follow();
    return this;
  }

  /** Resolves once every event committed before the call has been applied (or the follower ended). */
  caughtUp(): Promise<void> {
    if (this.running === undefined || this.stopped) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.kick();
    return done;
  }

  stats(): InspectionStats {
    return this.mirror.stats();
  }

  /** Stops following; resolves when the follower has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.kick();
    await this.running;
  }

  private kick(): void {
    this.pending = true;
    this.waiting?.();
  }

  private async follow(): Promise<void> {
    try {
      while (!this.stopped) {
        this.pending = false;
        // Only the callers waiting before this read began are served by it; later ones wait for the next.
        const served = this.idleWaiters;
        this.idleWaiters = [];
        while ((await this.drain()) && !this.stopped);
        for (const resolve of served) resolve();
        if (!this.pending && !this.stopped) await this.sleep();
      }
    } finally {
      this.releaseIdle();
    }
  }

  /** Applies one page; true when the page was full (more may follow at once). */
  private async drain(): Promise<boolean> {
    let entries: Array<{ position: number; data: EventEnvelope }>;
    try {
      entries = await this.store.read((r) => readEventFeed(r, { after: this.position, limit: PAGE }));
    } catch (error) {
      if (error instanceof StoreClosedError) this.stopped = true;
      else this.options.onError?.(error as Error);
      return false;
    }
    for (const entry of entries) {
      // The position moves first: an event is applied once, even when its sink throws.
      this.position = entry.position;
      try {
        this.mirror.apply(entry.data, entry.position);
      } catch (error) {
        this.options.onError?.(error as Error);
      }
    }
    return entries.length === PAGE;
  }

  private sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(wake, this.options.pollMs ?? INSPECTION_POLL_MS);
      // The follower never keeps a process alive on its own.
      timer.unref();
      function wake() {
        clearTimeout(timer);
        resolve();
      }
      this.waiting = () => {
        this.waiting = undefined;
        wake();
      };
    });
  }

  private releaseIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
