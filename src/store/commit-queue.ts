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
 * The group-commit queue both durable stores share: transactions queue while a batch is being written, and
 * the next batch takes up to `maxGroup` of them, so many callers share one durable write. `writeBatch`
 * answers every job of its batch (resolve or reject); the queue only orders and batches.
 */
export class CommitQueue {
  private readonly pending: QueuedTransaction[] = [];
  private draining: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly maxGroup: number,
    private readonly writeBatch: (batch: QueuedTransaction[]) => Promise<void>,
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
    while (this.draining !== undefined) await this.draining;
  }

  private kick(): void {
    if (this.draining !== undefined) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      // A job queued after the loop's last check but before this callback still gets its turn.
      if (this.pending.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      await settledCallers();
      await this.writeBatch(this.pending.splice(0, this.maxGroup));
    }
  }
}
