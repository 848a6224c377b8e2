import { StoreClosedError, type StoreTransaction } from './store.js';

/** One queued transaction: its body and how to answer its caller. */
export interface QueuedTransaction {
  body: (tx: StoreTransaction) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Resolves once every promise continuation queued so far has run. Callers answered by the last batch
 * usually queue their next transaction a few continuations later; waiting for them lets one batch take all
 * of them instead of splitting a burst into a big and a small group (1000 plans on SQLite: 32 -> 16 commits).
 * A tick callback, unlike a timer, runs before any I/O and is not replaced by test fake timers.
 */
const settledCallers = () => new Promise<void>((resolve) => process.nextTick(resolve));

/**
 * The group-commit queue the durable stores share: transactions queue while batches are being written, and
 * the next batch takes up to `maxGroup` of them, so many callers share one durable write. `writeBatch`
 * answers every job of its batch (resolve or reject); the queue only orders and batches. With `maxInFlight`
 * above 1 (PostgreSQL: each batch on a connection of its own) several batches are written at once and their
 * bodies may interleave; with 1 (the file stores' single writer) batches and bodies run one at a time, in order.
 */
export class CommitQueue {
  private readonly pending: QueuedTransaction[] = [];
  private readonly writing = new Set<Promise<void>>();
  private gathering: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly maxGroup: number,
    private readonly writeBatch: (batch: QueuedTransaction[]) => Promise<void>,
    private readonly maxInFlight = 1,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  enqueue<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    if (this.closed) return Promise.reject(new StoreClosedError('the store is closed'));
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ body, resolve: resolve as (v: unknown) => void, reject });
      this.kick();
    });
  }

  /** Refuses new transactions and waits until every queued one was answered. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.gathering !== undefined || this.writing.size > 0)
      await Promise.allSettled([this.gathering, ...this.writing]);
  }

  /** Starts a batch when jobs wait and a batch may start: after the callers of the moment have queued theirs. */
  private kick(): void {
    if (this.gathering !== undefined || this.pending.length === 0 || this.writing.size >= this.maxInFlight) return;
    this.gathering = settledCallers().then(() => {
      this.gathering = undefined;
      if (this.pending.length > 0 && this.writing.size < this.maxInFlight)
        this.start(this.pending.splice(0, this.maxGroup));
      // More jobs than one batch takes, or jobs queued meanwhile: the next batch gathers now if a place is free.
      this.kick();
    });
  }

  private start(batch: QueuedTransaction[]): void {
    const written: Promise<void> = this.writeBatch(batch)
      .catch((error: unknown) => {
        // writeBatch answers its jobs itself; one that threw past that leaves none unanswered (a second answer is
        // ignored by the promise it settles).
        for (const job of batch) job.reject(error);
      })
      .finally(() => {
        this.writing.delete(written);
        this.kick();
      });
    this.writing.add(written);
  }
}
