import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { CommitQueue, type QueuedTransaction } from './commit-queue.js';
import { basename, dirname, join, resolve } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile, type StoreDocument, type WriteFaults } from './durable-json-file.js';
import { acquireStoreLock, type HeldLock } from './file-lock.js';
import { CommittedState, Overlay } from './layered-state.js';
import { CommitListeners, StoreClosedError, type Store, type StoreReader, type StoreTransaction } from './store.js';

export interface JsonFileStoreOptions {
  /** Most transactions folded into one durable write. */
  maxGroupSize?: number;
  /** Failure injection for tests. */
  faults?: WriteFaults;
}


/** Bounds the latency one commit adds to the transactions queued behind it. */
const DEFAULT_MAX_GROUP_SIZE = 256;

/**
 * The embedded default store: one JSON file managed through lowdb with a durable adapter.
 *
 * - Every transaction is all-or-nothing. Transactions queued while a write is in flight are run one after
 *   another and committed together in the next write (group commit); each still succeeds or fails alone.
 * - One process at a time: a second opener gets {@link StoreLockedError} naming the holder.
 * - A corrupt, truncated or foreign file is refused with {@link StoreCorruptError} and never overwritten.
 *
 * @example
 * ```ts
 * const store = await JsonFileStore.open('./automations.json');
 * try {
 *   await store.transact((tx) => tx.append('automation/nightly', { kind: 'definition.created' }));
 * } finally {
 *   await store.close();
 * }
 * ```
 */
export class JsonFileStore implements Store {
  private readonly committed = new CommitListeners();
  private readonly queue: CommitQueue;

  private constructor(
    readonly file: string,
    private readonly db: Low<StoreDocument>,
    private readonly lock: HeldLock,
    maxGroupSize: number,
  ) {
    this.queue = new CommitQueue(maxGroupSize, (batch) => this.writeBatch(batch));
  }

  static async open(file: string, options: JsonFileStoreOptions = {}): Promise<JsonFileStore> {
    const path = resolve(file);
    mkdirSync(dirname(path), { recursive: true });
    const lock = await acquireStoreLock(path);
    try {
      const adapter = new DurableJsonFile(path, options.faults);
      removeStaleTempFiles(path);
      const db = new Low<StoreDocument>(adapter, { committed: new CommittedState(), pending: null });
      await db.read();
      return new JsonFileStore(path, db, lock, options.maxGroupSize ?? DEFAULT_MAX_GROUP_SIZE);
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.queue.enqueue(body);
  }

  async read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    if (this.queue.isClosed) throw new StoreClosedError('the store is closed');
    return body(new Overlay(this.db.data.committed));
  }

  onCommit(listener: () => void): () => void {
    return this.committed.add(listener);
  }

  async close(): Promise<void> {
    if (this.queue.isClosed) return;
    await this.queue.close();
    await this.lock.release();
  }

  private async writeBatch(batch: QueuedTransaction[]): Promise<void> {
    const lost = this.lock.compromised();
    if (lost !== undefined) {
      for (const job of batch) job.reject(new StoreClosedError(`the store lock was lost (${lost.message})`));
      return;
    }
    const group = new Overlay(this.db.data.committed);
    const succeeded: Array<[QueuedTransaction, unknown]> = [];
    for (const job of batch) {
      const tx = new Overlay(group);
      try {
        const result = await job.body(tx);
        tx.mergeInto(group);
        succeeded.push([job, result]);
      } catch (error) {
        job.reject(error);
      }
    }
    if (!group.isEmpty) {
      this.db.data.pending = group;
      try {
        await this.db.write();
      } catch (error) {
        for (const [job] of succeeded) job.reject(error);
        return;
      } finally {
        this.db.data.pending = null;
      }
      group.mergeInto(this.db.data.committed);
      this.committed.notify();
    }
    for (const [job, result] of succeeded) job.resolve(result);
  }
}

/** Temp files left by a process that died mid-write; we hold the lock, so none of them is live. */
function removeStaleTempFiles(path: string): void {
  const prefix = `.${basename(path)}.`;
  for (const name of readdirSync(dirname(path))) {
    if (name.startsWith(prefix) && name.endsWith('.tmp')) rmSync(join(dirname(path), name), { force: true });
  }
}
