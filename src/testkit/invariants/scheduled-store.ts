import type fc from 'fast-check';
import type { Store, StoreReader, StoreTransaction } from '../../store/store.js';

/**
 * Hands the order of transactions to a fast-check scheduler, so concurrent engines and commands interleave
 * in every order fast-check chooses (and shrinks to), instead of the one the event loop happens to pick.
 */
export class ScheduledStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly scheduler: fc.Scheduler,
  ) {}

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.scheduler.schedule(Promise.resolve(), 'transaction').then(() => this.inner.transact(body));
  }

  read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    return this.scheduler.schedule(Promise.resolve(), 'read').then(() => this.inner.read(body));
  }

  onCommit(listener: () => void): () => void {
    return this.inner.onCommit(listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
