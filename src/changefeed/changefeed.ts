import { sha256Hex } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import type { Clock } from '../clock/clock.js';
import type { LogEntry, Store, StoreReader, StoreTransaction } from '../store/store.js';
import { readStoreId, storeStream, type EventEnvelope, type StreamRef } from './event-envelope.js';
import { envelopeOf, recordedAtOf } from './stored-event.js';

/** Checkpoints expire a day after issue, as upstream's do; a later resume gets CURSOR_EXPIRED. */
export const CHECKPOINT_TTL_MS = 24 * 60 * 60 * 1000;
const FEED_ID = 'all';
const DEFAULT_PAGE = 100;

export interface ReadPage {
  stream: StreamRef;
  /** The cursor the page starts after (null: the beginning). */
  after: number | null;
  events: EventEnvelope[];
  /**
   * The store's global feed position of each event, in the same order as `events` (the cursor `--after` and
   * the SSE stream take on the feed). Kept beside the envelopes, which stay exactly the contract's.
   */
  positions: number[];
  /** Last delivered sequence (or global position on the feed); the request's cursor when empty. */
  nextAfter: number | null;
  checkpoint: string;
  checkpointExpiresAt: string;
}

interface CheckpointBody {
  s: string;
  a: number | null;
  e: number;
}

function isFeed(stream: StreamRef): boolean {
  return stream.kind === 'feed';
}

/** `meta/feed-horizon`: the highest global position retention removed; a feed cursor below it missed events. */
const HORIZON = { kind: 'meta', id: 'feed-horizon' } as const;

/** Records that retention removed the feed entry at `position` (and, with it, possibly others before it). */
export async function advanceFeedHorizon(tx: StoreTransaction, position: number): Promise<void> {
  const current = await tx.get<{ position: number }>(HORIZON.kind, HORIZON.id);
  if (current !== undefined && current.data.position >= position) return;
  await tx.put(HORIZON.kind, HORIZON.id, { position }, { expectedVersion: current?.version ?? null });
}

function compacted(stream: StreamRef, after: number, retainedFrom: number): ContractError {
  return new ContractError(
    'CURSOR_EXPIRED',
    `events after ${after} of ${storeStream(stream)} were compacted by retention; ` +
      'read again from the beginning, which starts at a snapshot',
    {
      stream: storeStream(stream),
      after,
      retainedFrom,
    },
  );
}

/**
 * The page after a cursor. A cursor behind what retention removed gets CURSOR_EXPIRED, never a silent skip:
 * on a stream, when its first retained entry is past the next one the cursor expects; on the feed, when the
 * cursor is below the horizon.
 */
async function entriesAfter(
  reader: StoreReader,
  stream: StreamRef,
  after: number | null,
  limit: number,
): Promise<LogEntry[]> {
  if (isFeed(stream)) {
    if (stream.id !== FEED_ID)
      throw new ContractError('VALIDATION_FAILED', `the global feed is stream {kind: "feed", id: "${FEED_ID}"}`, {
        stream,
      });
    if (after !== null) {
      const horizon = (await reader.get<{ position: number }>(HORIZON.kind, HORIZON.id))?.data.position;
      if (horizon !== undefined && after < horizon) throw compacted(stream, after, horizon + 1);
    }
    return reader.readFeed({ after: after ?? -1, limit });
  }
  const entries = await reader.readLog(storeStream(stream), { after: after ?? -1, limit });
  if (after !== null) {
    const first = entries[0]?.sequence ?? (await reader.readLog(storeStream(stream), { limit: 1 }))[0]?.sequence;
    if (first !== undefined && first > after + 1) throw compacted(stream, after, first);
  }
  return entries;
}

const cursorOf = (stream: StreamRef, entry: LogEntry) => (isFeed(stream) ? entry.position : entry.sequence);

/**
 * Reads of the changefeed: pages with cursors and expiring checkpoints, and live subscriptions.
 * Checkpoints are self-describing tokens bound to one stream and one store, so issuing one writes nothing.
 */
export class Changefeed {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly ttlMs = CHECKPOINT_TTL_MS,
  ) {}

  /**
   * One page of a stream after a cursor, or from an instant (`from`: the first event recorded at or after it).
   *
   * @example
   * ```ts
   * const page = await changefeed.read({ kind: 'automation', id: 'nightly' }, { after: -1, limit: 50 });
   * ```
   */
  async read(
    stream: StreamRef,
    options: { after?: number; from?: string; checkpoint?: string; limit?: number } = {},
  ): Promise<ReadPage> {
    if (options.after !== undefined && options.from !== undefined) {
      throw new ContractError('VALIDATION_FAILED', 'events.read takes `after` or `from`, not both');
    }
    return this.store.read(async (reader) => {
      const storeId = (await readStoreId(reader)) ?? 'empty';
      let after = options.after !== undefined && options.after >= 0 ? options.after : null;
      if (options.checkpoint !== undefined) after = this.resume(options.checkpoint, stream, storeId);
      if (options.from !== undefined) after = await this.resolveFrom(reader, stream, options.from);
      const entries = await entriesAfter(reader, stream, after, options.limit ?? DEFAULT_PAGE);
      const nextAfter = entries.length === 0 ? after : cursorOf(stream, entries[entries.length - 1]!);
      const expiresAt = this.clock.now().getTime() + this.ttlMs;
      return {
        stream,
        after,
        events: entries.map((entry) => envelopeOf(entry, storeId)),
        positions: entries.map((entry) => entry.position),
        nextAfter,
        checkpoint: this.issue(storeId, stream, nextAfter, expiresAt),
        checkpointExpiresAt: new Date(expiresAt).toISOString(),
      };
    });
  }

  /**
   * Live delivery: yields every event after the cursor (or checkpoint), then waits for commits and yields
   * what they append, until `signal` aborts.
   *
   * @example
   * ```ts
   * for await (const event of changefeed.subscribe({ kind: 'feed', id: 'all' }, { after: -1, signal })) render(event);
   * ```
   */
  async *subscribe(
    stream: StreamRef,
    options: { after?: number; checkpoint?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<EventEnvelope> {
    let after: number | null = options.after !== undefined && options.after >= 0 ? options.after : null;
    // An event read before the store has an id (nothing was ever appended) cannot exist: read again once it has one.
    let storeId = await this.store.read(readStoreId);
    if (options.checkpoint !== undefined) after = this.resume(options.checkpoint, stream, storeId ?? 'empty');
    const signal = options.signal;
    const aborted = () => signal?.aborted === true;
    while (!aborted()) {
      // Arm the wake-up before reading, so a commit between the read and the wait is never missed.
      let wake: () => void = () => undefined;
      const committed = new Promise<void>((resolve) => (wake = resolve));
      const unsubscribe = this.store.onCommit(() => wake());
      const onAbort = () => wake();
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const entries = await this.store.read(async (reader) => {
          storeId ??= await readStoreId(reader);
          return entriesAfter(reader, stream, after, DEFAULT_PAGE);
        });
        for (const entry of entries) {
          after = cursorOf(stream, entry);
          yield envelopeOf(entry, storeId ?? 'empty');
          if (aborted()) return;
        }
        if (entries.length === 0) await committed;
      } finally {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      }
    }
  }

  private issue(storeId: string, stream: StreamRef, after: number | null, expiresAt: number): string {
    const body = Buffer.from(
      JSON.stringify({ s: storeStream(stream), a: after, e: expiresAt } satisfies CheckpointBody),
    ).toString('base64url');
    return `ecp1.${body}.${this.seal(storeId, body)}`;
  }

  private seal(storeId: string, body: string): string {
    return sha256Hex(`${storeId}\u0000${body}`).slice(0, 32);
  }

  /** The cursor a checkpoint stands for; CURSOR_EXPIRED after its expiry, never a silent rewind. */
  private resume(checkpoint: string, stream: StreamRef, storeId: string): number | null {
    const [version, body, seal] = checkpoint.split('.');
    let parsed: CheckpointBody | undefined;
    if (version === 'ecp1' && body !== undefined && seal === this.seal(storeId, body)) {
      try {
        parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CheckpointBody;
      } catch {
        parsed = undefined;
      }
    }
    if (parsed === undefined)
      throw new ContractError('VALIDATION_FAILED', 'checkpoint is not one this store issued', { field: 'checkpoint' });
    if (parsed.s !== storeStream(stream)) {
      throw new ContractError(
        'VALIDATION_FAILED',
        `checkpoint belongs to stream ${parsed.s}, not ${storeStream(stream)}`,
        { field: 'checkpoint' },
      );
    }
    if (this.clock.now().getTime() >= parsed.e) {
      throw new ContractError(
        'CURSOR_EXPIRED',
        `checkpoint expired at ${new Date(parsed.e).toISOString()}; read again from a cursor`,
        {
          expiredAt: new Date(parsed.e).toISOString(),
          stream: parsed.s,
        },
      );
    }
    return parsed.a;
  }

  private async resolveFrom(reader: StoreReader, stream: StreamRef, from: string): Promise<number | null> {
    const at = Date.parse(from);
    let after: number | null = null;
    for (;;) {
      const page = await entriesAfter(reader, stream, after, 1000);
      for (const entry of page) {
        if (Date.parse(recordedAtOf(entry)) >= at) return after;
        after = cursorOf(stream, entry);
      }
      if (page.length < 1000) return after;
    }
  }
}
