import type Database from 'better-sqlite3';
import type { WriterCache } from './sqlite-writer-cache.js';
import { StagedWrites, type StagedWrite } from '../staged-writes.js';
import { exceptHeld, LIVE_WORK_PATHS, liveWorkColumns, liveWorkRow, sqliteField } from '../live-work.js';
import { timelineCountsQuery, timelineQuery } from './timeline-queries.js';
import {
  checkedEntry,
  checkedPage,
  checkedRecord,
  checkedVersion,
  entryChecksum,
  inOrder,
  recordChecksum,
  type LogRow,
  type Row,
} from './sqlite-rows.js';
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
  type LogEntry,
  type LogPosition,
  type PutOptions,
  type ReadLogOptions,
  type RecordVersion,
  type StoredRecord,
  type StoreReader,
  type StoreTransaction,
  type TimelineEntry,
  type TimelineFilter,
  type TimelineKind,
  type TimelineOptions,
} from '../store.js';

/**
 * Kinds whose ids and versions every pass lists (the engine's definitions and plan cursors: see
 * VersionedRecords): a partial index covers them. Without it a large store read `version` from one table
 * row per definition, twice per daemon loop.
 */
export const VERSIONS_INDEXED = new Map([
  ['definition', 'versions_of_definitions'],
  ['plan-cursor', 'versions_of_plan_cursors'],
]);

/**
 * The indexes of live work (records not terminal): a kind's, and an automation's. Their expressions are the
 * queries' own, so SQLite finds the rows from the index; only the live rows are read.
 */
export const LIVE_WORK_INDEXES = `
CREATE INDEX IF NOT EXISTS live_work ON records (kind, id) WHERE terminal = 0;
CREATE INDEX IF NOT EXISTS live_work_by_automation ON records (kind, ${sqliteField(LIVE_WORK_PATHS.automationId)})
  WHERE terminal = 0;`;
const LIVE_WORK_QUERY =
  `SELECT id, ${liveWorkColumns(sqliteField)} FROM records INDEXED BY live_work ` +
  'WHERE kind = ? AND terminal = 0 ORDER BY id';
const LIVE_WORK_OF_AUTOMATION_QUERY =
  `SELECT id, ${liveWorkColumns(sqliteField)} FROM records INDEXED BY live_work_by_automation ` +
  `WHERE kind = ? AND ${sqliteField(LIVE_WORK_PATHS.automationId)} = ? AND terminal = 0 ORDER BY id`;

const UNIQUE_VIOLATION = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

/**
 * A range of one kind's records in id order; one prepared statement per shape (absent bounds are left out,
 * not matched loosely). With `index`, the kind is written literally and the partial index named: a partial
 * index serves only a statement that names its kind (a bound parameter could be any kind), and without
 * statistics the planner still prefers the unique (kind, id) index. Indexed kinds are this module's
 * constants, so the literal is safe.
 */
function rangeQuery(columns: string, kind: string, options: ListOptions, index?: string): [string, unknown[]] {
  const bounds = [
    ...(options.after === undefined ? [] : ['id > ?']),
    ...(options.before === undefined ? [] : ['id < ?']),
  ];
  const source = index === undefined ? 'records WHERE kind = ?' : `records INDEXED BY ${index} WHERE kind = '${kind}'`;
  const sql = `SELECT ${columns} FROM ${source}${bounds.map((b) => ` AND ${b}`).join('')} ORDER BY id LIMIT ?`;
  return [
    sql,
    [
      ...(index === undefined ? [kind] : []),
      ...(options.after === undefined ? [] : [options.after]),
      ...(options.before === undefined ? [] : [options.before]),
      options.limit ?? -1,
    ],
  ];
}

/** Prepared once per connection: preparing per call costs more than most of the queries it runs. */
export class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(
    readonly db: Database.Database,
    /** The store file, named in the errors of reads that find a row changed. */
    readonly file: string,
  ) {}
  get(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }
}

/** Reads through one connection: inside a transaction they see its writes, outside only committed data. */
export class SqliteReader implements StoreReader {
  constructor(protected readonly sql: Statements) {}

  async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const row = this.sql.get('SELECT * FROM records WHERE kind = ? AND id = ?').get(kind, id) as Row | undefined;
    return row === undefined ? undefined : checkedRecord<T>(this.sql.file, row, kind, id);
  }
  async version(kind: string, id: string): Promise<number | undefined> {
    // The row is checked whole (its data read, not parsed): a version is what a caller trusts its copy by.
    const row = this.sql.get('SELECT * FROM records WHERE kind = ? AND id = ?').get(kind, id) as Row | undefined;
    return row === undefined ? undefined : checkedVersion(this.sql.file, row, kind, id);
  }
  async list<T>(kind: string, options: ListOptions = {}): Promise<Array<StoredRecord<T>>> {
    const [sql, values] = rangeQuery('*', kind, options);
    return checkedPage(
      this.sql.file,
      kind,
      options,
      (this.sql.get(sql).all(...values) as Row[]).map((r) => checkedRecord<T>(this.sql.file, r, kind)),
    );
  }
  async versions(kind: string, options: ListOptions = {}): Promise<RecordVersion[]> {
    const [sql, values] = rangeQuery('id, version', kind, options, VERSIONS_INDEXED.get(kind));
    return this.sql.get(sql).all(...values) as RecordVersion[];
  }
  async liveWork(kind: LiveKind, options: LiveWorkOptions = {}): Promise<LiveWork[]> {
    const rows = (
      options.automationId === undefined
        ? this.sql.get(LIVE_WORK_QUERY).all(kind)
        : this.sql.get(LIVE_WORK_OF_AUTOMATION_QUERY).all(kind, options.automationId)
    ) as Array<Record<string, unknown> & { id: string }>;
    return exceptHeld(
      kind,
      rows.map((row) => liveWorkRow(row.id, (field) => row[field])),
      options,
    );
  }
  async timeline(kind: TimelineKind, options: TimelineOptions): Promise<TimelineEntry[]> {
    const [sql, values] = timelineQuery(kind, options);
    return this.sql.get(sql).all(...values) as TimelineEntry[];
  }
  async timelineCounts(kind: TimelineKind, filter: TimelineFilter): Promise<Record<string, number>> {
    const [sql, values] = timelineCountsQuery(kind, filter);
    const rows = this.sql.get(sql).all(...values) as Array<{ state: string; n: number }>;
    return Object.fromEntries(rows.map((row) => [row.state, row.n]));
  }
  async head(stream: string): Promise<number> {
    const row = this.sql.get('SELECT MAX(sequence) AS s FROM log WHERE stream = ?').get(stream) as { s: number | null };
    return row.s === null ? 0 : row.s + 1;
  }
  async readLog<T>(stream: string, options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const rows = this.sql
      .get('SELECT * FROM log WHERE stream = ? AND sequence > ? ORDER BY sequence LIMIT ?')
      .all(stream, options.after ?? -1, options.limit ?? -1) as LogRow[];
    return inOrder(
      this.sql.file,
      `stream ${stream}`,
      options.after ?? -1,
      rows.map((r) => checkedEntry<T>(this.sql.file, r, stream)),
      (e) => e.sequence,
    );
  }
  async readFeed<T>(options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const rows = this.sql
      .get('SELECT * FROM log WHERE position > ? ORDER BY position LIMIT ?')
      .all(options.after ?? -1, options.limit ?? -1) as LogRow[];
    return inOrder(
      this.sql.file,
      'the changefeed',
      options.after ?? -1,
      rows.map((r) => checkedEntry<T>(this.sql.file, r)),
      (e) => e.position,
    );
  }
}

export class SqliteTransaction extends SqliteReader implements StoreTransaction {
  /** Rows written, so a group that only read commits without waking changefeed listeners. */
  writes = 0;
  /** The current job's puts, sent once per record (see {@link StagedWrites}). */
  private readonly staged = new StagedWrites();
  /** Whether the current job called {@link routine}: the store reads it and resets it between jobs. */
  jobRoutine = false;

  constructor(
    sql: Statements,
    private readonly cache: WriterCache,
  ) {
    super(sql);
  }

  override async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const known = this.staged.get<T>(kind, id) ?? this.cache.record(kind, id);
    if (known !== undefined) return (known ?? undefined) as StoredRecord<T> | undefined;
    const record = await super.get<T>(kind, id);
    this.cache.remember(kind, id, record ?? null);
    return record;
  }

  override async version(kind: string, id: string): Promise<number | undefined> {
    const known = this.staged.get(kind, id) ?? this.cache.record(kind, id);
    return known === undefined ? super.version(kind, id) : known?.version;
  }

  override async list<T>(kind: string, options?: ListOptions): Promise<Array<StoredRecord<T>>> {
    this.flush();
    return super.list<T>(kind, options);
  }

  override async versions(kind: string, options?: ListOptions): Promise<RecordVersion[]> {
    this.flush();
    return super.versions(kind, options);
  }

  override async liveWork(kind: LiveKind, options?: LiveWorkOptions): Promise<LiveWork[]> {
    this.flush();
    return super.liveWork(kind, options);
  }

  override async timeline(kind: TimelineKind, options: TimelineOptions): Promise<TimelineEntry[]> {
    this.flush();
    return super.timeline(kind, options);
  }

  override async timelineCounts(kind: TimelineKind, filter: TimelineFilter): Promise<Record<string, number>> {
    this.flush();
    return super.timelineCounts(kind, filter);
  }

  override async head(stream: string): Promise<number> {
    let next = this.cache.head(stream);
    if (next === undefined) {
      next = await super.head(stream);
      this.cache.rememberHead(stream, next);
    }
    return next;
  }

  async put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>> {
    const record = this.staged.stage(kind, id, data, options, this.cache.record(kind, id));
    this.writes++;
    this.cache.remember(kind, id, record);
    return record;
  }

  /**
   * Sends the job's staged puts, one statement per record: due before its savepoint is released and before
   * anything reads records through SQL. A refused compare-and-set throws as the put would have.
   */
  flush(): void {
    for (const write of this.staged.take()) this.send(write);
  }

  routine(): void {
    this.jobRoutine = true;
  }

  /** The job rolled back: what it staged is gone with it. */
  discardStaged(): void {
    this.staged.clear();
  }

  private send({ record, text, stored }: StagedWrite): void {
    const { kind, id, version } = record;
    const terminal = record.terminal ? 1 : 0;
    const crc = recordChecksum(kind, id, version, terminal, text);
    let changed: number;
    try {
      changed =
        stored === null
          ? this.sql
              .get('INSERT INTO records (kind, id, version, terminal, data, crc) VALUES (?, ?, ?, ?, ?, ?)')
              .run(kind, id, version, terminal, text, crc).changes
          : this.sql
              .get(
                'UPDATE records SET version = ?, terminal = ?, data = ?, crc = ? ' +
                  'WHERE kind = ? AND id = ? AND version = ? AND terminal = 0',
              )
              .run(version, terminal, text, crc, kind, id, stored).changes;
    } catch (error) {
      if (!UNIQUE_VIOLATION.has((error as { code?: string }).code ?? '')) throw error;
      this.refusal(kind, id, stored);
      throw new StoreConflictError(`${kind} ${id} would break a uniqueness rule: ${(error as Error).message}`, {
        kind,
        id,
        expectedVersion: stored,
      });
    }
    if (changed !== 1) {
      this.refusal(kind, id, stored);
      throw new StoreConflictError(`${kind} ${id} changed underneath`, { kind, id, expectedVersion: stored });
    }
  }

  /** Throws why a put at `expected` was refused: the record is sealed, or at another version (or absent). */
  private refusal(kind: string, id: string, expected: number | null): void {
    const current = this.sql.get('SELECT version, terminal FROM records WHERE kind = ? AND id = ?').get(kind, id) as
      { version: number; terminal: number } | undefined;
    if (current?.terminal === 1) throw new TerminalRecordError(kind, id);
    const currentVersion = current?.version ?? null;
    if (currentVersion !== expected) {
      throw StoreConflictError.forVersion(kind, id, expected, currentVersion);
    }
  }

  async delete(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, false);
  }

  async expire(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, true);
  }

  private async remove(kind: string, id: string, expected: number, evenSealed: boolean): Promise<void> {
    // A record this job wrote is judged against what it staged; one it created was never sent, so nothing is.
    const stored = this.staged.unstage(kind, id, expected, evenSealed);
    if (stored === null) {
      this.writes++;
      this.cache.remember(kind, id, null);
      return;
    }
    const expectedVersion = stored ?? expected;
    // As with put: one statement when the compare-and-set holds; the row is read only to say why it did not.
    const removed = this.sql
      .get(`DELETE FROM records WHERE kind = ? AND id = ? AND version = ?${evenSealed ? '' : ' AND terminal = 0'}`)
      .run(kind, id, expectedVersion).changes;
    if (removed !== 1) {
      const current = this.sql.get('SELECT version, terminal FROM records WHERE kind = ? AND id = ?').get(kind, id) as
        { version: number; terminal: number } | undefined;
      if (current?.terminal === 1 && !evenSealed) throw new TerminalRecordError(kind, id);
      throw new StoreConflictError(`${kind} ${id} is not at version ${expectedVersion}`, {
        kind,
        id,
        expectedVersion,
        currentVersion: current?.version ?? null,
      });
    }
    this.writes++;
    this.cache.remember(kind, id, null);
  }

  async append<T>(stream: string, data: T, expectedSequence?: number): Promise<LogPosition> {
    const sequence = await this.head(stream);
    if (expectedSequence !== undefined && expectedSequence !== sequence)
      throw new StreamSequenceError(stream, expectedSequence, sequence);
    const text = JSON.stringify(data);
    if (this.cache.nextPosition === undefined) {
      const last = this.sql.get('SELECT MAX(position) AS p FROM log').get() as { p: number | null };
      this.cache.nextPosition = last.p === null ? 0 : last.p + 1;
    }
    const position = this.cache.nextPosition;
    // UNIQUE(stream, sequence) backs the gapless head: a racing append fails instead of duplicating.
    this.sql
      .get('INSERT INTO log (position, stream, sequence, data, crc) VALUES (?, ?, ?, ?, ?)')
      .run(position, stream, sequence, text, entryChecksum(stream, sequence, position, text));
    this.writes++;
    this.cache.rememberHead(stream, sequence + 1);
    this.cache.nextPosition = position + 1;
    return { stream, sequence, position };
  }

  async trimLog(stream: string, before: number): Promise<number> {
    const head = await this.head(stream);
    if (before > head - 1) throw new LogTrimError(stream, before, head);
    // The newest entry stays, so MAX(sequence) and MAX(position) (the next sequence and position) never move back.
    const dropped = this.sql.get('DELETE FROM log WHERE stream = ? AND sequence < ?').run(stream, before).changes;
    this.writes += dropped;
    return dropped;
  }

  async retireLog(stream: string): Promise<number> {
    const last = this.sql.get('SELECT MAX(position) AS p FROM log WHERE stream = ?').get(stream) as {
      p: number | null;
    };
    if (last.p === null) return 0;
    // The next position is MAX(position) + 1 after a reopen: the feed's newest entry must stay.
    const newest = this.sql.get('SELECT MAX(position) AS p FROM log').get() as { p: number };
    if (last.p === newest.p) throw new LogRetireError(stream);
    const dropped = this.sql.get('DELETE FROM log WHERE stream = ?').run(stream).changes;
    this.writes += dropped;
    this.cache.rememberHead(stream, 0);
    return dropped;
  }
}
