import { firstPositionOf, positionAt, SLOTS_PER_TRANSACTION } from './feed-clock.js';
import { CLAIM_DUE_SQL } from './live-work-queries.js';
import { TransactionRecords, type StagedAppend, type StagedWrite } from './transaction-records.js';
import { sendStaged, sendStagedThenCommit, type Refusals } from './send-staged.js';
import { prefetchRows } from './prefetch.js';
import { PostgresReader, toRecord } from './postgres-reader.js';
import {
  LogRetireError,
  LogTrimError,
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type ListOptions,
  type LiveKind,
  type LiveWork,
  type LiveWorkOptions,
  type LogPosition,
  type PrefetchOptions,
  type PutOptions,
  type ReadLogOptions,
  type StoredRecord,
  type StoreTransaction,
  type TimelineFilter,
  type TimelineKind,
  type TimelineOptions,
} from '../store.js';

export { PostgresReader } from './postgres-reader.js';

/**
 * The writes of one group of transactions on one connection, inside one database transaction. A PostgreSQL
 * error (not a refused compare-and-set, which writes nothing and raises nothing) aborts the database
 * transaction: the job that met it is rolled back whole even if its body caught the error.
 */
export class PostgresTransaction extends PostgresReader implements StoreTransaction {
  /** Rows written, so a group that only read commits without waking commit listeners. */
  writes = 0;
  /** The first database error of the current job. */
  failure: unknown;
  private readonly heads = new Map<string, number>();
  /** Records this group's transaction created: rows no other transaction can see, let alone hold. */
  private readonly created = new Set<string>();
  /** The first feed position of this group's transaction id, known from its first append. */
  private firstPosition: bigint | undefined;
  /** Positions of the group's range taken so far: a rolled-back job's stay taken (the feed may have gaps). */
  private slots = 0;
  private jobStartWrites = 0;
  private jobQuiet = false;
  /** Rows written by jobs that asked for quiet: their commit wakes nobody. */
  private quietWrites = 0;
  private readonly records = new TransactionRecords();
  /**
   * An automation's live occurrences as this job's prefetch found them, and the job's write count then: the answer
   * stands for as long as the job writes nothing more (nothing staged, nothing sent: the database would answer
   * the same within this transaction's one snapshot).
   */
  private prefetchedLive: { automationId: string; writes: number; work: LiveWork[] } | undefined;

  /** Starts a job of the group: what its rollback returns to. */
  beginJob(): void {
    this.failure = undefined;
    this.prefetchedLive = undefined;
    this.jobStartWrites = this.writes;
    this.jobQuiet = false;
  }
  /** The current job's body and its writes went through: it is part of what the group commits. */
  finishJob(): void {
    if (this.jobQuiet) this.quietWrites += this.writes - this.jobStartWrites;
  }
  /** Rows written by the group's finished jobs that should wake commit listeners (see {@link quiet}). */
  get wakingWrites(): number {
    return this.writes - this.quietWrites;
  }
  /**
   * This job's writes matter to no engine's pass (an owner lease renewed): its commit neither notifies the other
   * engines nor wakes this store's listeners, so idle engines stop waking one another with every renewal.
   */
  quiet(): void {
    this.jobQuiet = true;
  }
  /** The job's savepoint was rolled back: forget what it wrote. */
  rollbackJob(): void {
    this.prefetchedLive = undefined;
    this.writes = this.jobStartWrites;
    this.heads.clear();
    this.records.clear();
    this.failure = undefined;
  }

  /** Sends the job's staged writes (see {@link TransactionRecords}); a refused one throws as its put would have. */
  async flush(): Promise<void> {
    const writes = this.records.takeStaged();
    const appends = this.records.takeAppends();
    await this.explain(await this.guarded(() => sendStaged(this.db, writes, appends)));
  }

  /**
   * The last job of a group: sends its staged writes with the group's COMMIT in one message. Answers whether it
   * committed (false: nothing was staged, so the caller commits as usual). A refused write rolls the whole
   * transaction back and throws as {@link flush} would: only a group of one job may end this way.
   */
  async flushThenCommit(): Promise<boolean> {
    const writes = this.records.takeStaged();
    const appends = this.records.takeAppends();
    if (writes.length === 0 && appends.length === 0) return false;
    const refusals = await this.guarded(() => sendStagedThenCommit(this.db, writes, appends));
    if (refusals === 'unsent') {
      await this.explain(await this.guarded(() => sendStaged(this.db, writes, appends)));
      return false;
    }
    if (refusals === undefined) return true;
    // Rolled back: the refusal is explained from the current state, read outside any transaction.
    return 'refused' in refusals ? this.refused(refusals.refused) : this.lostAppend(refusals.lost);
  }

  /** Throws why a write was refused, if one was: the record is sealed or moved, or the stream's sequence was taken. */
  private async explain({ refused, lost }: Refusals): Promise<void> {
    if (refused !== undefined) await this.refused(refused);
    if (lost !== undefined) await this.lostAppend(lost);
  }

  /** Throws that an append's sequence was taken by another writer, with the stream's head now. */
  private async lostAppend(lost: StagedAppend): Promise<never> {
    this.records.clear();
    this.heads.delete(lost.stream);
    throw new StreamSequenceError(lost.stream, lost.sequence, await this.head(lost.stream));
  }

  protected override ownPositions(): readonly [bigint, bigint] | undefined {
    const first = this.firstPosition;
    return first === undefined ? undefined : [first, first + BigInt(SLOTS_PER_TRANSACTION)];
  }

  private async guarded<R>(work: () => Promise<R>): Promise<R> {
    if (this.failure !== undefined) throw this.failure;
    try {
      return await work();
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }

  /** A read of many rows: the staged writes go first, so it sees them. */
  private async flushed<R>(read: () => Promise<R>): Promise<R> {
    await this.flush();
    return this.guarded(read);
  }

  override async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const known = this.records.lookup<T>(kind, id);
    if (known !== undefined) return known ?? undefined;
    const record = await this.guarded(() => super.get<T>(kind, id));
    this.records.remember(kind, id, record);
    return record;
  }
  override async getMany<T>(kind: string, ids: readonly string[]): Promise<Array<StoredRecord<T>>> {
    const unknown = ids.filter((id) => this.records.lookup(kind, id) === undefined);
    if (unknown.length > 0) {
      const found = new Map((await this.guarded(() => super.getMany<T>(kind, unknown))).map((r) => [r.id, r]));
      for (const id of unknown) this.records.remember(kind, id, found.get(id));
    }
    return ids.flatMap((id) => this.records.lookup<T>(kind, id) ?? []);
  }
  override async version(kind: string, id: string): Promise<number | undefined> {
    const known = this.records.lookup(kind, id);
    if (known !== undefined) return known?.version;
    return this.guarded(() => super.version(kind, id));
  }
  override async list<T>(kind: string, options?: ListOptions) {
    return this.flushed(() => super.list<T>(kind, options));
  }
  override async versions(kind: string, options?: ListOptions) {
    return this.flushed(() => super.versions(kind, options));
  }
  override async liveWork(kind: LiveKind, options?: LiveWorkOptions) {
    const known = this.prefetchedLive;
    if (
      known !== undefined &&
      known.writes === this.writes &&
      kind === 'occurrence' &&
      options?.automationId === known.automationId &&
      options.exceptHeldBy === undefined
    )
      return [...known.work];
    return this.flushed(() => super.liveWork(kind, options));
  }
  override async timeline(kind: TimelineKind, options: TimelineOptions) {
    return this.flushed(() => super.timeline(kind, options));
  }
  override async timelineCounts(kind: TimelineKind, filter: TimelineFilter) {
    return this.flushed(() => super.timelineCounts(kind, filter));
  }
  override async hasDueOccurrences(now: string) {
    return this.flushed(() => super.hasDueOccurrences(now));
  }
  /** One statement: see {@link CLAIM_DUE_SQL}. */
  async lockDueOccurrences(
    now: string,
    limit: number,
    skip: readonly string[],
    othersShare: readonly string[] = [],
  ): Promise<string[]> {
    await this.flush();
    const values = [now, limit, skip, othersShare];
    const rows = await this.guarded(() => this.db.rows<{ id: string }>(CLAIM_DUE_SQL, values));
    return rows.map((row) => row.id);
  }
  override async readLog<T>(stream: string, options?: ReadLogOptions) {
    return this.flushed(() => super.readLog<T>(stream, options));
  }
  override async readFeed<T>(options?: ReadLogOptions) {
    return this.flushed(() => super.readFeed<T>(options));
  }
  override async head(stream: string): Promise<number> {
    const known = this.heads.get(stream);
    if (known !== undefined) return known;
    const next = await this.guarded(() => super.head(stream));
    this.heads.set(stream, next);
    return next;
  }

  async prefetch(
    records: ReadonlyArray<readonly [kind: string, id: string]>,
    streams: readonly string[],
    options?: PrefetchOptions,
  ) {
    const keys = records.filter(([kind, id]) => this.records.lookup(kind, id) === undefined);
    const unknown = streams.filter((stream) => !this.heads.has(stream));
    // The transaction id fixes this group's feed positions: asked for here, the first append costs no round trip.
    const withXid = options?.appending === true && this.firstPosition === undefined;
    // Only before the job's first write: the database does not hold what the job has staged.
    const liveOf = options?.liveOccurrencesOf;
    const asksLive = liveOf !== undefined && this.writes === this.jobStartWrites;
    if (keys.length === 0 && unknown.length === 0 && !withXid && !asksLive) return;
    const found = await this.guarded(() =>
      prefetchRows(this.db, keys, unknown, withXid, asksLive ? liveOf : undefined),
    );
    if (asksLive) this.prefetchedLive = { automationId: liveOf, writes: this.writes, work: found.live };
    const byKey = new Map(found.records.map((row) => [`${row.kind}\u0000${row.id}`, toRecord(row)]));
    for (const [kind, id] of keys) this.records.remember(kind, id, byKey.get(`${kind}\u0000${id}`));
    for (const [stream, next] of found.heads) this.heads.set(stream, next);
    if (found.xid !== undefined) this.firstPosition ??= firstPositionOf(this.db.feed, found.xid);
  }

  async put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>> {
    if (this.failure !== undefined) throw this.failure;
    const record = this.records.stage(kind, id, data, options);
    if (options.expectedVersion === null) this.created.add(`${kind}\u0000${id}`);
    this.writes++;
    return record;
  }

  /** Throws why a staged write was refused: the record is sealed, at another version, or the insert broke a rule. */
  private async refused({ record, stored }: StagedWrite): Promise<never> {
    const { kind, id } = record;
    this.records.clear();
    await this.refusal(kind, id, stored);
    const why = stored === null ? 'would break a uniqueness rule' : 'changed underneath';
    throw new StoreConflictError(`${kind} ${id} ${why}`, { kind, id, expectedVersion: stored });
  }

  /** Throws why a write at `expected` was refused: the record is sealed, or at another version (or absent). */
  private async refusal(kind: string, id: string, expected: number | null, evenSealed = false): Promise<void> {
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
   * FOR UPDATE SKIP LOCKED on the record's row: an engine passes over work another engine holds instead of
   * waiting for its group to commit. A row changed since this group's snapshot raises a serialization failure
   * (a {@link StoreConflictError}), as any write to it would.
   */
  async lockUnlessBusy(kind: string, id: string): Promise<boolean> {
    // A row this transaction inserts is invisible to every other until it commits (a racing insert of the same key
    // is refused when this one is sent): it is this engine's already, and asking costs a round trip.
    if (this.created.has(`${kind}\u0000${id}`)) return true;
    await this.flush();
    const locked = await this.guarded(
      async () =>
        (await this.db.run('SELECT 1 FROM {s}.records WHERE kind = $1 AND id = $2 FOR UPDATE SKIP LOCKED', [kind, id]))
          .rowCount,
    );
    return locked === 1 || (await this.version(kind, id)) === undefined;
  }

  async delete(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, false);
  }

  async expire(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, true);
  }

  private async remove(kind: string, id: string, expected: number, evenSealed: boolean): Promise<void> {
    // A record this job wrote is judged against what it staged; one it created was never sent, so nothing is.
    const stored = this.records.unstage(kind, id, expected, evenSealed);
    if (stored === null) {
      this.records.forget(kind, id);
      this.writes++;
      return;
    }
    const expectedVersion = stored ?? expected;
    const sealedToo = evenSealed ? '' : ' AND NOT terminal';
    const sql = `DELETE FROM {s}.records WHERE kind = $1 AND id = $2 AND version = $3${sealedToo}`;
    const removed = await this.guarded(async () => (await this.db.run(sql, [kind, id, expectedVersion])).rowCount);
    if (removed !== 1) {
      await this.refusal(kind, id, expectedVersion, evenSealed);
      // The row is at the expected version and not sealed, yet was not removed: only a concurrent change does that.
      throw new StoreConflictError(`${kind} ${id} changed underneath`, { kind, id, expectedVersion });
    }
    this.records.forget(kind, id);
    this.writes++;
  }

  async append<T>(stream: string, data: T, expectedSequence?: number): Promise<LogPosition> {
    // A stream the caller knows is new (its entity is created here) is not looked up: were it not new, the sent
    // append breaks UNIQUE(stream, sequence) and the job is refused with StreamSequenceError, as a lookup would.
    const sequence = expectedSequence === 0 && !this.heads.has(stream) ? 0 : await this.head(stream);
    if (expectedSequence !== undefined && expectedSequence !== sequence)
      throw new StreamSequenceError(stream, expectedSequence, sequence);
    const position = await this.takePosition();
    const text = JSON.stringify(data);
    // UNIQUE(stream, sequence) backs the gapless head when the append is sent: one racing another engine's is
    // refused, not doubled.
    this.records.stageAppend({ stream, sequence, position, text });
    this.writes++;
    this.heads.set(stream, sequence + 1);
    return { stream, sequence, position };
  }

  /**
   * The feed position for the next append: the next slot of this transaction's range, which its transaction id
   * fixes (the top-level id, so savepoints share it). No lock: groups of every store append at once, and the
   * readers' horizon keeps a later position from being served before an earlier one commits.
   */
  private async takePosition(): Promise<number> {
    const first = (this.firstPosition ??= await this.guarded(async () => {
      const [row] = await this.db.rows<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid', []);
      return firstPositionOf(this.db.feed, BigInt(row!.xid));
    }));
    const position = positionAt(this.db.location, first, this.slots);
    this.slots++;
    return position;
  }

  async trimLog(stream: string, before: number): Promise<number> {
    await this.flush();
    const head = await this.head(stream);
    if (before > head - 1) throw new LogTrimError(stream, before, head);
    // The newest entry stays, so MAX(sequence), the next sequence, never moves back.
    const dropped = await this.guarded(
      async () =>
        (await this.db.run('DELETE FROM {s}.log WHERE stream = $1 AND sequence < $2', [stream, before])).rowCount,
    );
    this.writes += dropped ?? 0;
    return dropped ?? 0;
  }

  async retireLog(stream: string): Promise<number> {
    await this.flush();
    // As on every store, the feed's newest entry stays (positions here come from transaction ids and could
    // not come back anyway, but the rule is the port's, so a store moved between backends behaves alike).
    const [row] = await this.guarded(() =>
      this.db.rows<{ last: string | null; newest: string | null }>(
        'SELECT (SELECT MAX(position) FROM {s}.log WHERE stream = $1) AS last, ' +
          '(SELECT MAX(position) FROM {s}.log) AS newest',
        [stream],
      ),
    );
    if (row?.last === null || row?.last === undefined) return 0;
    if (row.last === row.newest) throw new LogRetireError(stream);
    const dropped = await this.guarded(
      async () => (await this.db.run('DELETE FROM {s}.log WHERE stream = $1', [stream])).rowCount,
    );
    this.writes += dropped ?? 0;
    this.heads.set(stream, 0);
    return dropped ?? 0;
  }
}
