import { firstPositionOf } from './feed-clock.js';
import { CLAIM_DUE_SQL } from './live-work-queries.js';
import { prefetchRows, type RecordRow } from './prefetch.js';
import { RecentCommitsStep } from './own-commits.js';
import { GroupTransaction } from './group-transaction.js';
import { toRecord } from './postgres-reader.js';
import { liveWorkOfRecord } from '../live-work.js';
import {
  LogRetireError,
  LogTrimError,
  StoreConflictError,
  StreamSequenceError,
  type ListOptions,
  type LiveKind,
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
 * One job's view of its group's database transaction (see {@link GroupTransaction}): reads answered from what the
 * transaction already holds where they can be, writes staged to be sent in one statement.
 */
export class PostgresTransaction extends GroupTransaction implements StoreTransaction {
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
    if (options?.recentCommits !== undefined && options.liveOccurrencesOf === undefined && this.mayRely()) {
      this.recent = RecentCommitsStep.answer(this.own!, keys, unknown, options.recentCommits.absentUnlessRemembered);
      if (this.recent !== undefined) {
        for (const { kind, id, record } of this.recent.records) this.records.remember(kind, id, record);
        for (const { stream, next } of this.recent.heads) this.heads.set(stream, next);
        return;
      }
    }
    // The transaction id fixes this group's feed positions: asked for here, the first append costs no round trip.
    const withXid = options?.appending === true && this.firstPosition === undefined;
    // Only before the job's first write: the database does not hold what the job has staged.
    const liveOf = options?.liveOccurrencesOf;
    const asksLive = liveOf !== undefined && this.writes === this.jobStartWrites;
    if (keys.length === 0 && unknown.length === 0 && !withXid && !asksLive) return;
    const found = await this.guarded(() =>
      prefetchRows(this.db, keys, unknown, withXid, asksLive ? liveOf : undefined),
    );
    if (asksLive) this.prefetchedLive = { automationId: liveOf, work: found.live };
    const byKey = new Map(found.records.map((row) => [`${row.kind}\u0000${row.id}`, row]));
    for (const [kind, id] of keys) {
      const row = byKey.get(`${kind}\u0000${id}`);
      const record = row === undefined ? undefined : toRecord(row);
      this.records.remember(kind, id, record);
      this.own?.rememberRecord(kind, id, record, row?.xmin ?? null);
    }
    for (const [stream, next] of found.heads) this.heads.set(stream, next);
    if (found.xid !== undefined) this.firstPosition ??= firstPositionOf(this.db.feed, found.xid);
  }

  async put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>> {
    if (this.failure !== undefined) throw this.failure;
    const record = this.records.stage(kind, id, data, options);
    if (options.expectedVersion === null) this.created.add(`${kind}\u0000${id}`);
    this.writes++;
    this.followLive(kind, id, record);
    return record;
  }

  /**
   * Keeps the automation's live occurrences this step's prefetch read true of the write just made: an occurrence
   * put moves in or out of them, one removed leaves them; other kinds' writes and appends change nothing. A
   * planning step that claims the occurrence it created then asks for them (its overlap check) without a round trip.
   */
  private followLive(kind: string, id: string, record: StoredRecord | undefined): void {
    const known = this.prefetchedLive;
    if (known === undefined || kind !== 'occurrence') return;
    let work = known.work.filter((w) => w.id !== id);
    const summary = record === undefined ? undefined : liveWorkOfRecord(record);
    if (summary?.automationId === known.automationId)
      work = [...work, summary].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.prefetchedLive = { ...known, work };
  }

  /**
   * FOR UPDATE SKIP LOCKED on the record's row: an engine passes over work another engine holds instead of
   * waiting for its group to commit. A row changed since this group's snapshot raises a serialization failure
   * (a {@link StoreConflictError}), as any write to it would. So a row locked is the snapshot's, which a `get`
   * would answer: it is kept for the step's reads (each caller reads the record next), saving that round trip.
   */
  async lockUnlessBusy(kind: string, id: string): Promise<boolean> {
    // A row this transaction inserts is invisible to every other until it commits (a racing insert of the same key
    // is refused when this one is sent): it is this engine's already, and asking costs a round trip.
    if (this.created.has(`${kind}\u0000${id}`)) return true;
    await this.flush();
    // Often a step's first statement (a dispatch's, a settlement's): then its BEGIN travels with it.
    const [row] = await this.guarded(() =>
      this.db.rowsOpening<RecordRow>('SELECT * FROM {s}.records WHERE kind = $1 AND id = $2 FOR UPDATE SKIP LOCKED', [
        kind,
        id,
      ]),
    );
    if (row === undefined) return (await this.version(kind, id)) === undefined;
    if (this.records.lookup(kind, id) === undefined) this.records.remember(kind, id, toRecord(row));
    return true;
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
      this.noteRemoved(kind, id);
      this.writes++;
      this.followLive(kind, id, undefined);
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
    this.noteRemoved(kind, id);
    this.writes++;
    this.followLive(kind, id, undefined);
  }

  async append<T>(stream: string, data: T, expectedSequence?: number): Promise<LogPosition> {
    // A stream the caller knows is new (its entity is created here) is not looked up: were it not new, the sent
    // append breaks UNIQUE(stream, sequence) and the job is refused with StreamSequenceError, as a lookup would.
    const sequence = expectedSequence === 0 && !this.heads.has(stream) ? 0 : await this.head(stream);
    if (expectedSequence !== undefined && expectedSequence !== sequence)
      throw new StreamSequenceError(stream, expectedSequence, sequence);
    const { position, slot } = await this.takePosition();
    const text = JSON.stringify(data);
    // UNIQUE(stream, sequence) backs the gapless head when the append is sent: one racing another engine's is
    // refused, not doubled.
    this.records.stageAppend({ stream, sequence, position, slot, text });
    this.writes++;
    this.heads.set(stream, sequence + 1);
    return { stream, sequence, position };
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
    // Kept conservative: a trim is not a write the followed live occurrences account for.
    this.prefetchedLive = undefined;
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
    this.prefetchedLive = undefined;
    this.heads.set(stream, 0);
    return dropped ?? 0;
  }
}
