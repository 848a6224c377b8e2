import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { CommitQueue, type QueuedTransaction } from '../commit-queue.js';
import { basename, dirname, join, resolve } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile, type SnapshotFileSystem, type StoreDocument } from './durable-json-file.js';
import { acquireStoreLock, type HeldLock } from '../file-lock.js';
import type { Placement } from '../cold-lines.js';
import type { HistoryFile, JournalPlacements } from './cold-history.js';
import { readJournalHeader } from './journal-header.js';
import { createJournal, Journal } from './json-journal.js';
import { JournalDamage } from './journal-groups.js';
import { makePrivateFolder, refuseReadOnly } from '../private-files.js';
import { CommittedState } from '../layered-state.js';
import { Overlay } from '../overlay.js';
import {
  CommitListeners,
  type CommitListener,
  StoreClosedError,
  StoreCorruptError,
  type LogEntry,
  type Store,
  type StoreReader,
  type StoredRecord,
  type StoreTransaction,
} from '../store.js';

export interface JsonFileStoreOptions {
  /** Most transactions folded into one durable write. */
  maxGroupSize?: number;
  /** How a written snapshot replaces the store file (default: node:fs rename); tests wrap it to crash there. */
  files?: SnapshotFileSystem;
  /**
   * Journal size (bytes) from which the next commit folds it into the snapshot; default: the snapshot's size, at
   * least 8 MiB and at most 64 MiB.
   */
  compactAtBytes?: number;
}

/** Bounds the latency one commit adds to the transactions queued behind it. */
const DEFAULT_MAX_GROUP_SIZE = 256;
/** Below this a journal replays in milliseconds; folding it sooner would rewrite small snapshots for nothing. */
const MIN_COMPACT_BYTES = 8 * 1_048_576;
/**
 * A fold reads the journal whole (the history left in it moves to the snapshot), so past this it folds
 * even if the snapshot is larger: a big store's fold copies its snapshot a little more often instead.
 */
const MAX_COMPACT_BYTES = 64 * 1_048_576;

/**
 * The embedded default store: a JSON snapshot file (a lowdb document written through the durable adapter in
 * durable-json-file.ts; files: FORMAT.md), and a journal beside it (`<file>.journal`, one line per group commit)
 * folded into the snapshot as it grows and on close, so the file at rest is one readable JSON document.
 *
 * - Every transaction is all-or-nothing. Transactions queued while a write is in flight are run one after
 *   another and committed together in the next journal append (group commit); each still succeeds or fails alone.
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

  private snapshotBytes: number;
  /** The fold in progress, if any: it writes a snapshot while commits go on. */
  private folding: Promise<void> | undefined;

  private constructor(
    readonly file: string,
    private readonly adapter: DurableJsonFile,
    private readonly db: Low<StoreDocument>,
    private readonly journal: Journal,
    private readonly lock: HeldLock,
    maxGroupSize: number,
    private readonly compactAtBytes: number | undefined,
    /** Named in every snapshot and journal header this store writes (a store from before gets one here). */
    private readonly storeId: string,
  ) {
    this.queue = new CommitQueue(maxGroupSize, (batch) => this.writeBatch(batch));
    this.snapshotBytes = statSync(file).size;
  }

  /**
   * Opens the store at `file`, creating it only when neither its snapshot nor a journal with commits is
   * there. A snapshot and journal that do not belong together (a journal missing, another store's or of
   * another generation; a journal with commits but without its snapshot) are refused with
   * {@link StoreCorruptError}, and a read-only snapshot or journal with {@link StoreReadOnlyError}; either way
   * nothing is written.
   */
  static async open(file: string, options: JsonFileStoreOptions = {}): Promise<JsonFileStore> {
    const path = resolve(file);
    makePrivateFolder(dirname(path));
    const lock = await acquireStoreLock(path);
    try {
      refuseReadOnly(path);
      refuseReadOnly(journalPath(path));
      const adapter = new DurableJsonFile(path, options.files);
      removeStaleTempFiles(path);
      const db = new Low<StoreDocument>(adapter, {
        committed: new CommittedState<HistoryFile>(),
        journalThrough: 0,
        journal: undefined,
      });
      await db.read();
      // A new store gets its snapshot at once, so the file exists (and says what it is) from the first open.
      if (!existsSync(path)) await createStore(path, db);
      const journal = await Journal.open(
        journalPath(path),
        db.data.committed,
        db.data.journalThrough,
        db.data.journal,
      ).catch((error: unknown) => {
        db.data.committed.closeHistory();
        const offset = error instanceof JournalDamage ? error.offset : undefined;
        throw new StoreCorruptError(journalPath(path), (error as Error).message, offset);
      });
      const storeId = db.data.journal?.storeId ?? randomUUID();
      const store = new JsonFileStore(
        path,
        adapter,
        db,
        journal,
        lock,
        options.maxGroupSize ?? DEFAULT_MAX_GROUP_SIZE,
        options.compactAtBytes,
        storeId,
      );
      // A journal from before group checksums is folded before any commit appends to it (see Journal.checksummed).
      if (!journal.checksummed)
        await store.fold().catch(async (error: unknown) => {
          db.data.committed.closeHistory();
          await journal.close();
          throw error;
        });
      return store;
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

  onCommit(listener: CommitListener): () => void {
    return this.committed.add(listener);
  }

  /**
   * Resolves once no fold of the journal into the snapshot is in progress. Folds run beside commits and
   * never fail one; this is for a caller that wants the file on disk to be a complete snapshot, e.g. before
   * copying it.
   *
   * @example
   * ```ts
   * await store.foldSettled();
   * copyFileSync(store.file, backupPath); // plus `${store.file}.journal` for any commits since the fold
   * ```
   */
  async foldSettled(): Promise<void> {
    while (this.folding !== undefined) await this.folding;
  }

  async close(): Promise<void> {
    if (this.queue.isClosed) return;
    await this.queue.close();
    await this.foldSettled();
    try {
      if (this.journal.size > 0 && this.lock.compromised() === undefined) await this.fold();
    } finally {
      this.db.data.committed.closeHistory();
      await this.journal.close();
      await this.lock.release();
    }
  }

  /**
   * Folds the journal into a new snapshot: written from a point-in-time copy of the state (references only),
   * then the journal drops the groups the snapshot holds and keeps any committed meanwhile (in that order: a
   * crash between keeps both, and replay skips what the snapshot holds). `through` and `bytes` are read, and
   * the copy taken, before the first await, so they describe the same instant.
   */
  private async fold(): Promise<void> {
    const through = this.journal.lastSeq;
    const end = this.journal.end;
    // The journal's next generation, not the snapshot's: after a fold whose cut failed, the next one names
    // the same generation again, so the journal on disk is never more than one behind the snapshot.
    const next = { storeId: this.storeId, generation: this.journal.generation + 1 };
    const placed = new Map<StoredRecord | LogEntry, Placement>();
    const state = this.db.data.committed.pointInTime();
    const journals = await this.journal.readAcknowledged();
    const history = await this.adapter.writeSnapshotHoldingHistory(state, through, next, placed, journals);
    this.db.data.committed.adoptHistory(history, placed);
    this.db.data.journalThrough = through;
    this.db.data.journal = next;
    const cut = await this.journal.cutThrough(end, next);
    this.db.data.committed.moveJournalLines(cut);
    cut.from.close();
    this.snapshotBytes = statSync(this.file).size;
  }

  private async writeBatch(batch: QueuedTransaction[]): Promise<void> {
    const lost = this.lock.compromised();
    if (lost !== undefined) {
      for (const job of batch) job.reject(new StoreClosedError(`the store lock was lost (${lost.message})`));
      return;
    }
    const group = new Overlay(this.db.data.committed);
    const succeeded: Array<[QueuedTransaction, unknown]> = [];
    let routine = true;
    for (const job of batch) {
      const tx = new Overlay(group);
      try {
        const result = await job.body(tx);
        if (!tx.isEmpty && !tx.isRoutine) routine = false;
        tx.mergeInto(group);
        succeeded.push([job, result]);
      } catch (error) {
        job.reject(error);
      }
    }
    if (!group.isEmpty) {
      let placed: JournalPlacements;
      try {
        placed = await this.journal.append(group.changes());
      } catch (error) {
        for (const [job] of succeeded) job.reject(error);
        return;
      }
      group.mergeInto(this.db.data.committed);
      this.db.data.committed.leaveInJournal(placed);
      this.committed.notify('local', routine);
    }
    for (const [job, result] of succeeded) job.resolve(result);
    if (
      this.folding === undefined &&
      this.journal.size >=
        (this.compactAtBytes ?? Math.min(MAX_COMPACT_BYTES, Math.max(MIN_COMPACT_BYTES, this.snapshotBytes)))
    ) {
      this.folding = this.foldWhileCommitting().finally(() => {
        this.folding = undefined;
      });
    }
  }

  /**
   * A fold beside the commit queue, so commits go on while it encodes (on a large state that takes long enough
   * that commits must not wait for it). The groups are durable in the journal already, so a failed fold only leaves it
   * longer for the next try.
   */
  private async foldWhileCommitting(): Promise<void> {
    if (this.lock.compromised() !== undefined) return;
    await this.fold().catch(() => undefined);
  }
}

const journalPath = (path: string) => `${path}.journal`;

/**
 * Creates a new store: its journal (a header of generation 1) first, then its snapshot, so a crash between
 * leaves a journal of generation 1 without commits, which the next open replaces. Any other journal without
 * its snapshot proves the snapshot existed (a fold made a later generation, or commits followed it): it was
 * moved or deleted, and a new store would lose what it held. Refused, nothing written; to start afresh,
 * remove the journal too.
 */
async function createStore(path: string, db: Low<StoreDocument>): Promise<void> {
  const journal = journalPath(path);
  if (existsSync(journal)) {
    const handle = await open(journal, 'r');
    try {
      const header = await readJournalHeader(handle).catch(() => undefined);
      const size = (await handle.stat()).size;
      const creationCrash = header?.identity?.generation === 1 && size === header.bytes;
      if (!creationCrash)
        throw new StoreCorruptError(
          path,
          `the snapshot is missing but its journal ${journal} is there (${size} bytes, ` +
            `${header?.identity === undefined ? 'no generation' : `generation ${header.identity.generation}`}): ` +
            'the snapshot was moved or deleted, and a new store would lose what it held. Put the snapshot ' +
            'back (or restore it from a backup); to start a new, empty store instead, remove the journal too',
        );
    } finally {
      await handle.close();
    }
  }
  const identity = { storeId: randomUUID(), generation: 1 };
  await createJournal(journal, identity);
  db.data.journal = identity;
  await db.write();
}

/** Temp files left by a process that died mid-write; we hold the lock, so none of them is live. */
function removeStaleTempFiles(path: string): void {
  const prefix = `.${basename(path)}.`;
  for (const name of readdirSync(dirname(path))) {
    if (name.startsWith(prefix) && name.endsWith('.tmp')) rmSync(join(dirname(path), name), { force: true });
  }
}
