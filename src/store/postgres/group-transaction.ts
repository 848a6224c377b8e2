import { FeedCapacityError, firstPositionOf, positionAt, SLOTS_PER_TRANSACTION, xidOf } from './feed-clock.js';
import { TransactionRecords, type StagedAppend, type StagedWrite } from './transaction-records.js';
import { sendStaged, sendStagedThenCommit, type Refusals } from './send-staged.js';
import { prefetchRows } from './prefetch.js';
import { StaleOwnCommits, xminOf, type OwnCommits, type RecentCommitsStep } from './own-commits.js';
import { sendCheckedThenCommit } from './checked-send.js';
import type { Connection } from './connection.js';
import { PostgresReader } from './postgres-reader.js';
import {
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type LiveWork,
  type StoredRecord,
} from '../store.js';

/**
 * What one group's database transaction holds across its jobs and how it sends them: the records it read and
 * staged, stream heads, its feed positions, and its one statement of writes per job (with the COMMIT for the last).
 * A PostgreSQL error (not a refused compare-and-set, which writes nothing and raises nothing) aborts the database
 * transaction: the job that met it is rolled back whole even if its body caught the error. The store's side of
 * each job is {@link PostgresTransaction}.
 */
export abstract class GroupTransaction extends PostgresReader {
  /**
   * `own`: what the store remembers of its own commits, which this transaction adds to; `relying`: whether a step
   * may answer its reads from it (a group of one job, on its first run).
   */
  constructor(
    db: Connection,
    protected readonly own?: OwnCommits,
    protected readonly alone = false,
    protected readonly relying = alone,
  ) {
    super(db);
  }
  /** What the group's jobs sent (undefined: removed) and the heads they left, for the store to remember. */
  protected readonly sent = new Map<string, { kind: string; id: string; record: StoredRecord<unknown> | undefined }>();
  protected readonly sentHeads = new Map<string, number>();
  /** The transaction's id, when a commit that checked what it relied on answered it. */
  protected committedXid: bigint | undefined;

  /** Rows written, so a group that only read commits without waking commit listeners. */
  writes = 0;
  /** A step answering its reads from the store's memory of its own commits (see {@link prefetch}). */
  protected recent: RecentCommitsStep | undefined;
  /** The first database error of the current job. */
  failure: unknown;
  protected readonly heads = new Map<string, number>();
  /** Records this group's transaction created: rows no other transaction can see, let alone hold. */
  protected readonly created = new Set<string>();
  /** The first feed position of this group's transaction id, known from its first append. */
  protected firstPosition: bigint | undefined;
  /** Positions of the group's range taken so far: a rolled-back job's stay taken (the feed may have gaps). */
  protected slots = 0;
  protected jobStartWrites = 0;
  protected jobQuiet = false;
  /** Rows written by jobs that asked for quiet: their commit wakes nobody. */
  protected quietWrites = 0;
  protected jobRoutine = false;
  /** Rows written by finished jobs that were neither quiet nor routine (see {@link routine}). */
  protected pressingWrites = 0;
  protected readonly records = new TransactionRecords();
  /**
   * An automation's live occurrences as this job's prefetch found them, kept true of the job's own occurrence writes
   * since (PostgresTransaction.followLive): within this transaction's one snapshot the database would answer the
   * same. Dropped by a log trim or retirement, and at the job's end.
   */
  protected prefetchedLive: { automationId: string; work: LiveWork[] } | undefined;

  /** Starts a job of the group: what its rollback returns to. */
  beginJob(): void {
    this.failure = undefined;
    this.recent = undefined;
    this.prefetchedLive = undefined;
    this.jobStartWrites = this.writes;
    this.jobQuiet = false;
    this.jobRoutine = false;
  }
  /** The current job's body and its writes went through: it is part of what the group commits. */
  finishJob(): void {
    if (this.jobQuiet) this.quietWrites += this.writes - this.jobStartWrites;
    else if (!this.jobRoutine) this.pressingWrites += this.writes - this.jobStartWrites;
  }
  /** Rows written by the group's finished jobs that should wake commit listeners (see {@link quiet}). */
  get wakingWrites(): number {
    return this.writes - this.quietWrites;
  }
  /** Whether every finished job that wakes commit listeners called {@link routine}. */
  get isRoutine(): boolean {
    return this.pressingWrites === 0;
  }
  /**
   * This job's writes matter to no engine's pass (an owner lease renewed): its commit neither notifies the other
   * engines nor wakes this store's listeners, so idle engines stop waking one another with every renewal.
   */
  quiet(): void {
    this.jobQuiet = true;
  }
  /** This job's commit is routine (see `StoreTransaction.routine`); other engines still hear of it. */
  routine(): void {
    this.jobRoutine = true;
  }
  /** The job's savepoint was rolled back: forget what it wrote. */
  rollbackJob(): void {
    this.prefetchedLive = undefined;
    this.recent = undefined;
    this.sent.clear();
    this.sentHeads.clear();
    this.writes = this.jobStartWrites;
    this.heads.clear();
    this.records.clear();
    this.failure = undefined;
  }

  /** Sends the job's staged writes (see {@link TransactionRecords}); a refused one throws as its put would have. */
  async flush(): Promise<void> {
    // A step that relied on the store's memory reads what it relied on first: its appends then have positions.
    if (this.recent !== undefined) await this.guarded(() => Promise.resolve());
    const writes = this.records.takeStaged();
    const appends = this.records.takeAppends();
    await this.explain(await this.guarded(() => sendStaged(this.db, writes, appends)));
    this.noteSent(writes, appends);
  }

  /**
   * The last job of a group: sends its staged writes with the group's COMMIT in one message. Answers whether it
   * committed (false: nothing was staged, so the caller commits as usual). A refused write rolls the whole
   * transaction back and throws as {@link flush} would: only a group of one job may end this way.
   */
  async flushThenCommit(): Promise<boolean> {
    const writes = this.records.takeStaged();
    const appends = this.records.takeAppends();
    if (writes.length === 0 && appends.length === 0) {
      if (this.recent !== undefined) await this.guarded(() => Promise.resolve());
      return false;
    }
    if (this.recent !== undefined) return this.commitRelying(writes, appends);
    const refusals = await this.guarded(() => sendStagedThenCommit(this.db, writes, appends));
    if (refusals === 'unsent') {
      await this.explain(await this.guarded(() => sendStaged(this.db, writes, appends)));
      this.noteSent(writes, appends);
      return false;
    }
    this.noteSent(writes, appends);
    if (refusals === undefined) return true;
    // Rolled back: the refusal is explained from the current state, read outside any transaction.
    return 'refused' in refusals ? this.refused(refusals.refused) : this.lostAppend(refusals.lost);
  }

  /** {@link flushThenCommit} for a step that answered its reads from the store's memory: checked as it commits. */
  protected async commitRelying(writes: StagedWrite[], appends: StagedAppend[]): Promise<boolean> {
    const { expected } = this.recent!;
    this.recent = undefined;
    const outcome = await this.guarded(() => sendCheckedThenCommit(this.db, this.db.feed, writes, appends, expected));
    if (outcome === 'stale') throw (this.failure = new StaleOwnCommits());
    if (outcome === 'feed-full')
      throw (this.failure = new FeedCapacityError(this.db.location, 'feed positions outgrew a JavaScript number'));
    if ('xid' in outcome) {
      this.committedXid = outcome.xid;
      const first = firstPositionOf(this.db.feed, outcome.xid);
      this.noteSent(
        writes,
        appends.map((append) => ({ ...append, position: positionAt(this.db.location, first, append.slot) })),
      );
      return true;
    }
    return 'refused' in outcome ? this.refused(outcome.refused) : this.lostAppend(outcome.lost);
  }

  /**
   * A step that answered its reads from the store's memory needs the database after all: it reads what it relied on
   * (and the transaction's id) and goes on if nothing moved; else it must run again ({@link StaleOwnCommits}).
   */
  protected async readWhatWasRelied(): Promise<void> {
    const recent = this.recent!;
    this.recent = undefined;
    const found = await prefetchRows(this.db, recent.keys, recent.streams, true);
    if (!recent.unchanged(found)) throw new StaleOwnCommits();
    const first = (this.firstPosition = firstPositionOf(this.db.feed, found.xid!));
    this.records.placeAppends((slot) => positionAt(this.db.location, first, slot));
  }

  /**
   * Whether a prefetch may answer from the store's memory: nothing read, written or sent in this transaction, and
   * no step answered from memory already (a second would replace what the first relied on, unchecked at commit).
   */
  protected mayRely(): boolean {
    return (
      this.relying &&
      this.own !== undefined &&
      this.recent === undefined &&
      this.db.unbegun &&
      this.firstPosition === undefined &&
      this.slots === 0 &&
      this.writes === 0
    );
  }

  /** A removal sent (or a created record removed before it was): the record is gone once the group commits. */
  protected noteRemoved(kind: string, id: string): void {
    if (this.alone) this.sent.set(`${kind}\u0000${id}`, { kind, id, record: undefined });
  }

  protected noteSent(writes: readonly StagedWrite[], appends: readonly StagedAppend[]): void {
    if (!this.alone) return;
    for (const { record } of writes) {
      this.sent.set(`${record.kind}\u0000${record.id}`, { kind: record.kind, id: record.id, record });
    }
    for (const { stream, sequence } of appends) this.sentHeads.set(stream, sequence + 1);
  }

  /**
   * The group committed: a group of one job tells the store what it wrote, with the transaction's id as each row's
   * `xmin` (in a group of several each job's rows carry its savepoint's own id, which the store cannot know).
   */
  rememberCommitted(): void {
    if (!this.alone || this.own === undefined) return;
    const xid =
      this.committedXid ?? (this.firstPosition === undefined ? undefined : xidOf(this.db.feed, this.firstPosition));
    if (xid === undefined) return;
    const xmin = xminOf(xid);
    for (const { kind, id, record } of this.sent.values()) this.own.rememberRecord(kind, id, record, xmin);
    for (const [stream, next] of this.sentHeads) this.own.rememberHead(stream, next);
  }

  /** Throws why a write was refused, if one was: the record is sealed or moved, or the stream's sequence was taken. */
  protected async explain({ refused, lost }: Refusals): Promise<void> {
    if (refused !== undefined) await this.refused(refused);
    if (lost !== undefined) await this.lostAppend(lost);
  }

  /** Throws that an append's sequence was taken by another writer, with the stream's head now. */
  protected async lostAppend(lost: StagedAppend): Promise<never> {
    this.records.clear();
    this.heads.delete(lost.stream);
    throw new StreamSequenceError(lost.stream, lost.sequence, await this.head(lost.stream));
  }

  protected override ownPositions(): readonly [bigint, bigint] | undefined {
    const first = this.firstPosition;
    return first === undefined ? undefined : [first, first + BigInt(SLOTS_PER_TRANSACTION)];
  }

  protected async guarded<R>(work: () => Promise<R>): Promise<R> {
    if (this.failure !== undefined) throw this.failure;
    try {
      if (this.recent !== undefined) await this.readWhatWasRelied();
      return await work();
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }

  /** A read of many rows: the staged writes go first, so it sees them. */
  protected async flushed<R>(read: () => Promise<R>): Promise<R> {
    await this.flush();
    return this.guarded(read);
  }

  /** Throws why a staged write was refused: the record is sealed, at another version, or the insert broke a rule. */
  protected async refused({ record, stored }: StagedWrite): Promise<never> {
    const { kind, id } = record;
    this.records.clear();
    await this.refusal(kind, id, stored);
    const why = stored === null ? 'would break a uniqueness rule' : 'changed underneath';
    throw new StoreConflictError(`${kind} ${id} ${why}`, { kind, id, expectedVersion: stored });
  }

  /** Throws why a write at `expected` was refused: the record is sealed, or at another version (or absent). */
  protected async refusal(kind: string, id: string, expected: number | null, evenSealed = false): Promise<void> {
    const [current] = await this.guarded(() =>
      this.db.rows<{ version: number; terminal: boolean }>(
        'SELECT version, terminal FROM {s}.records WHERE kind = $1 AND id = $2',
        [kind, id],
      ),
    );
    if (current?.terminal === true && !evenSealed) throw new TerminalRecordError(kind, id);
    const currentVersion = current?.version ?? null;
    if (currentVersion !== expected || evenSealed) {
      throw StoreConflictError.forVersion(kind, id, expected, currentVersion);
    }
  }

  /**
   * The feed position for the next append: the next slot of this transaction's range, which its transaction id
   * fixes (the top-level id, so savepoints share it). No lock: groups of every store append at once, and the
   * readers' horizon keeps a later position from being served before an earlier one commits.
   */
  protected async takePosition(): Promise<{ position: number; slot: number }> {
    const slot = this.slots;
    // A step answering from the store's memory has no transaction id yet: its positions are taken as it commits.
    if (this.recent !== undefined) {
      positionAt(this.db.location, 0n, slot);
      this.slots++;
      return { position: Number.NaN, slot };
    }
    const first = (this.firstPosition ??= await this.guarded(async () => {
      const [row] = await this.db.rows<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid', []);
      return firstPositionOf(this.db.feed, BigInt(row!.xid));
    }));
    const position = positionAt(this.db.location, first, slot);
    this.slots++;
    return { position, slot };
  }
}
