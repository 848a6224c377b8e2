import { CommittedState } from './layered-state.js';
import { Overlay } from './overlay.js';
import {
  CommitListeners,
  StoreClosedError,
  type CommitListener,
  type Store,
  type StoreReader,
  type StoreTransaction,
} from './store.js';

/**
 * A store that keeps everything in memory, with the same transaction semantics as the file stores:
 * serialised bodies, all-or-nothing commits, compare-and-set, sealed terminal records.
 *
 * @example
 * ```ts
 * const store = new MemoryStore();
 * await store.transact((tx) => tx.put('definition', 'nightly', body, { expectedVersion: null }));
 * ```
 */
export class MemoryStore implements Store {
  private readonly state = new CommittedState();
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly committed = new CommitListeners();

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    const run = async (): Promise<R> => {
      if (this.closed) throw new StoreClosedError('the store is closed');
      const overlay = new Overlay(this.state);
      const result = await body(overlay);
      if (!overlay.isEmpty) {
        overlay.mergeInto(this.state);
        this.committed.notify('local', overlay.isRoutine);
      }
      return result;
    };
    const next = this.tail.then(run, run);
    this.tail = next.catch(() => undefined);
    return next;
  }

  async read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    if (this.closed) throw new StoreClosedError('the store is closed');
    return body(new Overlay(this.state));
  }

  onCommit(listener: CommitListener): () => void {
    return this.committed.add(listener);
  }

  async close(): Promise<void> {
    await this.tail;
    this.closed = true;
  }
}
