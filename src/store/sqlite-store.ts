import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { CommitQueue, type QueuedTransaction } from './commit-queue.js';
import { WriterCache } from './sqlite-writer-cache.js';
import { acquireStoreLock, type HeldLock } from './file-lock.js';
import { deepFreeze } from './deep-freeze.js';
import {
  CommitListeners,
  LogTrimError,
  StoreClosedError,
  StoreConflictError,
  StoreCorruptError,
  StreamSequenceError,
  TerminalRecordError,
  type ListOptions,
  type LogEntry,
  type PutOptions,
  type ReadLogOptions,
  type RecordVersion,
  type Store,
  type StoredRecord,
  type StoreReader,
  type StoreTransaction,
} from './store.js';

export interface SqliteStoreOptions {
  /** `FULL` (default) fsyncs every commit; `NORMAL` trades the last commits on power loss for speed under WAL. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Most queued transactions folded into one SQLite transaction. */
  maxGroupSize?: number;
  /** How long SQLite waits for a lock another connection holds before the transaction fails (default 5 s). */
  busyTimeoutMs?: number;
}

/** Identifies this package's schema; any other SQLite file is refused rather than altered. */
const SCHEMA_VERSION = 1;
const MAX_GROUP = 256;
/**
 * Write-ahead log SQLite folds into the database file by itself, inside whichever commit crosses it. The engine
 * folds it after each pass instead ({@link SqliteStore.checkpoint}): a burst's index pages are then copied once
 * each rather than once per 1000-page checkpoint, and not on a commit's latency path (1000 due at once: plan
 * batch −28 % on 100k history, start p95 −5..−10 % on 1k). This bound only holds the log (and its file, via
 * journal_size_limit) when no pass ends.
 */
const WAL_CHECKPOINT_BYTES = 32 * 1_048_576;
/**
 * Rows written before a pass's end folds the log: about what SQLite's default 1000-page bound held. A daemon
 * under a steady trickle passes every 100 ms; folding a few pages each time cost more (a database-file fsync
 * each) than it saved — arrivals cell claim p95 8-10 -> 11-17 ms with a checkpoint after every pass.
 */
export const CHECKPOINT_AFTER_WRITES = 1_024;
/** Long enough to outlast a WAL checkpoint or a brief outside reader; short enough that a stuck lock surfaces. */
const BUSY_TIMEOUT_MS = 5_000;
/**
 * Page size of a new store (an existing file keeps its own). A due burst dirties about one index leaf per
 * occurrence in each index and the WAL writes whole pages, so smaller pages cost less per commit; records
 * (≤ 2 KB) still fit a page. Bench, 1000 due at once on 100k history, 4 KiB -> 2 KiB: plan and dispatch
 * -25 %. The price is space: 1–1.5 KB rows pack worse, so what retention leaves per occurrence grew
 * 3043 -> 4463 B (and 22 -> 25 KB per occurrence without retention). 1 KiB was slower.
 */
const NEW_STORE_PAGE_SIZE = 2_048;

/**
 * Kinds whose ids and versions every pass lists (the engine's definitions and plan cursors: see
 * VersionedRecords): a partial index covers them. A 10,000-definition store read `version` from one table
 * row per definition — 55 ms a scan, two scans per daemon loop.
 */
const VERSIONS_INDEXED = new Map([
  ['definition', 'versions_of_definitions'],
  ['plan-cursor', 'versions_of_plan_cursors'],
]);

// Records are 1-2 KB of JSON: a rowid table with a separate (kind, id) index stores and updates them in
// less space and time than a WITHOUT ROWID table (bench, 1000 definitions: 33 -> 22 KB per occurrence,
// 10.3k -> 15.2k occurrences/min). Stores created before 2026-11-30 keep WITHOUT ROWID; every statement
// here works on both layouts, so the schema version is unchanged.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  kind TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, terminal INTEGER NOT NULL, data TEXT NOT NULL,
  UNIQUE (kind, id)
);
CREATE TABLE IF NOT EXISTS log (
  position INTEGER PRIMARY KEY, stream TEXT NOT NULL, sequence INTEGER NOT NULL, data TEXT NOT NULL,
  UNIQUE (stream, sequence)
);
-- Defence in depth under the machines: the database itself refuses a second run for one occurrence fence
-- and a session bound to two attempts, even if engine logic were wrong.
CREATE UNIQUE INDEX IF NOT EXISTS one_run_per_fence ON records (
  json_extract(data, '$.snapshot.context.occurrenceId'), json_extract(data, '$.snapshot.context.fenceGeneration')
) WHERE kind = 'run';
CREATE UNIQUE INDEX IF NOT EXISTS one_session_per_attempt ON records (json_extract(data, '$.snapshot.context.sessionId'))
  WHERE kind = 'attempt' AND json_extract(data, '$.snapshot.context.sessionId') IS NOT NULL;
-- Every pass lists the ids and versions of these kinds (versions()); from this index alone, instead of one
-- table row per record. Few rows, so the index stays a few pages that their writes keep in cache.
${[...VERSIONS_INDEXED].map(([kind, index]) => `CREATE INDEX IF NOT EXISTS ${index} ON records (kind, id, version) WHERE kind = '${kind}';`).join('\n')}
`;

const UNIQUE_VIOLATION = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
/** SQLite gave up waiting for a lock (after `busy_timeout`): another connection held the database. */
const isBusy = (error: unknown) => /^SQLITE_(BUSY|LOCKED)/.test((error as { code?: string }).code ?? '');

type Row = { kind: string; id: string; version: number; terminal: number; data: string };
type LogRow = { position: number; stream: string; sequence: number; data: string };

const toRecord = <T>(row: Row): StoredRecord<T> =>
  deepFreeze({ kind: row.kind, id: row.id, version: row.version, terminal: row.terminal === 1, data: JSON.parse(row.data) as T });
const toEntry = <T>(row: LogRow): LogEntry<T> => deepFreeze({ stream: row.stream, sequence: row.sequence, position: row.position, data: JSON.parse(row.data) as T });

/**
 * A range of one kind's records in id order; one prepared statement per shape (absent bounds are left out,
 * not matched loosely). With `index`, the kind is written literally and the partial index named: a partial
 * index serves only a statement that names its kind (a bound parameter could be any kind), and without
 * statistics the planner still prefers the unique (kind, id) index. Indexed kinds are this module's
 * constants, so the literal is safe.
 */
function rangeQuery(columns: string, kind: string, options: ListOptions, index?: string): [string, unknown[]] {
  const bounds = [...(options.after === undefined ? [] : ['id > ?']), ...(options.before === undefined ? [] : ['id < ?'])];
  const source = index === undefined ? 'records WHERE kind = ?' : `records INDEXED BY ${index} WHERE kind = '${kind}'`;
  const sql = `SELECT ${columns} FROM ${source}${bounds.map((b) => ` AND ${b}`).join('')} ORDER BY id LIMIT ?`;
  return [sql, [...(index === undefined ? [kind] : []), ...(options.after === undefined ? [] : [options.after]), ...(options.before === undefined ? [] : [options.before]), options.limit ?? -1]];
}

/** Prepared once per connection: preparing per call costs more than most of the queries it runs. */
class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(readonly db: Database.Database) {}
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
class SqliteReader implements StoreReader {
  constructor(protected readonly sql: Statements) {}

  async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const row = this.sql.get('SELECT * FROM records WHERE kind = ? AND id = ?').get(kind, id) as Row | undefined;
    return row === undefined ? undefined : toRecord<T>(row);
  }
  async version(kind: string, id: string): Promise<number | undefined> {
    return this.sql.get('SELECT version FROM records WHERE kind = ? AND id = ?').pluck().get(kind, id) as number | undefined;
  }
  async list<T>(kind: string, options: ListOptions = {}): Promise<Array<StoredRecord<T>>> {
    const [sql, values] = rangeQuery('*', kind, options);
    return (this.sql.get(sql).all(...values) as Row[]).map((r) => toRecord<T>(r));
  }
  async versions(kind: string, options: ListOptions = {}): Promise<RecordVersion[]> {
    const [sql, values] = rangeQuery('id, version', kind, options, VERSIONS_INDEXED.get(kind));
    return this.sql.get(sql).all(...values) as RecordVersion[];
  }
  async head(stream: string): Promise<number> {
    const row = this.sql.get('SELECT MAX(sequence) AS s FROM log WHERE stream = ?').get(stream) as { s: number | null };
    return row.s === null ? 0 : row.s + 1;
  }
  async readLog<T>(stream: string, options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const rows = this.sql
      .get('SELECT * FROM log WHERE stream = ? AND sequence > ? ORDER BY sequence LIMIT ?')
      .all(stream, options.after ?? -1, options.limit ?? -1) as LogRow[];
    return rows.map((r) => toEntry<T>(r));
  }
  async readFeed<T>(options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const rows = this.sql.get('SELECT * FROM log WHERE position > ? ORDER BY position LIMIT ?').all(options.after ?? -1, options.limit ?? -1) as LogRow[];
    return rows.map((r) => toEntry<T>(r));
  }
}

class SqliteTransaction extends SqliteReader implements StoreTransaction {
  /** Rows written, so a group that only read commits without waking changefeed listeners. */
  writes = 0;

  constructor(
    sql: Statements,
    private readonly cache: WriterCache,
  ) {
    super(sql);
  }

  override async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const known = this.cache.record(kind, id);
    if (known !== undefined) return (known ?? undefined) as StoredRecord<T> | undefined;
    const record = await super.get<T>(kind, id);
    this.cache.remember(kind, id, record ?? null);
    return record;
  }

  override async version(kind: string, id: string): Promise<number | undefined> {
    const known = this.cache.record(kind, id);
    return known === undefined ? super.version(kind, id) : known?.version;
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
    // One statement when the compare-and-set holds (nearly always); the current row is read only to say
    // why it did not.
    const text = JSON.stringify(data);
    const terminal = options.terminal === true ? 1 : 0;
    const expected = options.expectedVersion;
    const version = (expected ?? 0) + 1;
    let changed = 0;
    try {
      changed =
        expected === null
          ? this.sql.get('INSERT INTO records (kind, id, version, terminal, data) VALUES (?, ?, ?, ?, ?)').run(kind, id, version, terminal, text).changes
          : this.sql.get('UPDATE records SET version = ?, terminal = ?, data = ? WHERE kind = ? AND id = ? AND version = ? AND terminal = 0').run(version, terminal, text, kind, id, expected).changes;
    } catch (error) {
      if (!UNIQUE_VIOLATION.has((error as { code?: string }).code ?? '')) throw error;
      this.refusal(kind, id, expected);
      throw new StoreConflictError(`${kind} ${id} would break a uniqueness rule: ${(error as Error).message}`, { kind, id, expectedVersion: expected });
    }
    if (changed !== 1) {
      this.refusal(kind, id, expected);
      throw new StoreConflictError(`${kind} ${id} changed underneath`, { kind, id, expectedVersion: expected });
    }
    this.writes++;
    const record = deepFreeze({ kind, id, version, terminal: terminal === 1, data: JSON.parse(text) as T });
    this.cache.remember(kind, id, record);
    return record;
  }

  /** Throws why a put at `expected` was refused: the record is sealed, or at another version (or absent). */
  private refusal(kind: string, id: string, expected: number | null): void {
    const current = this.sql.get('SELECT version, terminal FROM records WHERE kind = ? AND id = ?').get(kind, id) as { version: number; terminal: number } | undefined;
    if (current?.terminal === 1) throw new TerminalRecordError(kind, id);
    const currentVersion = current?.version ?? null;
    if (currentVersion !== expected) {
      throw new StoreConflictError(
        current === undefined ? `${kind} ${id} does not exist (expected version ${String(expected)})` : `${kind} ${id} is at version ${current.version}, not ${String(expected)}`,
        { kind, id, expectedVersion: expected, currentVersion },
      );
    }
  }

  async delete(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, false);
  }

  async expire(kind: string, id: string, expectedVersion: number): Promise<void> {
    await this.remove(kind, id, expectedVersion, true);
  }

  private async remove(kind: string, id: string, expectedVersion: number, evenSealed: boolean): Promise<void> {
    // As with put: one statement when the compare-and-set holds; the row is read only to say why it did not.
    const removed = this.sql
      .get(`DELETE FROM records WHERE kind = ? AND id = ? AND version = ?${evenSealed ? '' : ' AND terminal = 0'}`)
      .run(kind, id, expectedVersion).changes;
    if (removed !== 1) {
      const current = this.sql.get('SELECT version, terminal FROM records WHERE kind = ? AND id = ?').get(kind, id) as { version: number; terminal: number } | undefined;
      if (current?.terminal === 1 && !evenSealed) throw new TerminalRecordError(kind, id);
      throw new StoreConflictError(`${kind} ${id} is not at version ${expectedVersion}`, { kind, id, expectedVersion, currentVersion: current?.version ?? null });
    }
    this.writes++;
    this.cache.remember(kind, id, null);
  }

  async append<T>(stream: string, data: T, expectedSequence?: number): Promise<LogEntry<T>> {
    const sequence = await this.head(stream);
    if (expectedSequence !== undefined && expectedSequence !== sequence) throw new StreamSequenceError(stream, expectedSequence, sequence);
    const text = JSON.stringify(data);
    if (this.cache.nextPosition === undefined) {
      const last = this.sql.get('SELECT MAX(position) AS p FROM log').get() as { p: number | null };
      this.cache.nextPosition = last.p === null ? 0 : last.p + 1;
    }
    const position = this.cache.nextPosition;
    // UNIQUE(stream, sequence) backs the gapless head: a racing append fails instead of duplicating.
    this.sql.get('INSERT INTO log (position, stream, sequence, data) VALUES (?, ?, ?, ?)').run(position, stream, sequence, text);
    this.writes++;
    this.cache.rememberHead(stream, sequence + 1);
    this.cache.nextPosition = position + 1;
    return deepFreeze({ stream, sequence, position, data: JSON.parse(text) as T });
  }

  async trimLog(stream: string, before: number): Promise<number> {
    const head = await this.head(stream);
    if (before > head - 1) throw new LogTrimError(stream, before, head);
    // The newest entry stays, so MAX(sequence) and MAX(position) (the next sequence and position) never move back.
    const dropped = this.sql.get('DELETE FROM log WHERE stream = ? AND sequence < ?').run(stream, before).changes;
    this.writes += dropped;
    return dropped;
  }
}


/**
 * The Store port on SQLite (better-sqlite3): WAL, real transactions, compare-and-set through conditional
 * updates and unique constraints, `synchronous=FULL` by default. Queued transactions are grouped into one
 * SQLite transaction with a savepoint each, so each still commits or rolls back alone. Reads use a second
 * connection and see only committed data. One process at a time, as with the JSON store.
 *
 * @example
 * ```ts
 * const store = await SqliteStore.open('automations.sqlite');
 * const engine = createEngine({ store, runtimes: [runtime] });
 * ```
 */
export class SqliteStore implements Store {
  private readonly committed = new CommitListeners();
  private readonly queue: CommitQueue;
  private readonly writeSql: Statements;
  private readonly readSql: Statements;
  private readonly cache = new WriterCache();
  private seenDataVersion = -1;
  private busy = 0;
  private writesSinceCheckpoint = 0;

  private constructor(
    readonly file: string,
    private readonly writer: Database.Database,
    private readonly reader: Database.Database,
    private readonly lock: HeldLock,
    maxGroup: number,
  ) {
    this.queue = new CommitQueue(maxGroup, (batch) => this.writeBatch(batch));
    this.writeSql = new Statements(writer);
    this.readSql = new Statements(reader);
  }

  static async open(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const path = resolve(file);
    mkdirSync(dirname(path), { recursive: true });
    const lock = await acquireStoreLock(path);
    let writer: Database.Database | undefined;
    try {
      writer = new Database(path);
      // Only takes effect on a file with no pages yet; it must come before WAL mode.
      writer.pragma(`page_size = ${NEW_STORE_PAGE_SIZE}`);
      writer.pragma('journal_mode = WAL');
      writer.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
      writer.pragma(`busy_timeout = ${options.busyTimeoutMs ?? BUSY_TIMEOUT_MS}`);
      const pageSize = writer.pragma('page_size', { simple: true }) as number;
      writer.pragma(`wal_autocheckpoint = ${Math.ceil(WAL_CHECKPOINT_BYTES / pageSize)}`);
      writer.pragma(`journal_size_limit = ${WAL_CHECKPOINT_BYTES}`);
      const version = (() => {
        const tables = writer.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
        if (tables.length === 0) return undefined;
        if (!tables.some((t) => t.name === 'meta')) throw new StoreCorruptError(path, 'not a coven-automata SQLite store');
        return (writer!.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").get() as { value: string } | undefined)?.value;
      })();
      if (version !== undefined && version !== String(SCHEMA_VERSION)) throw new StoreCorruptError(path, `schema version ${version} is not supported (this build reads ${SCHEMA_VERSION})`);
      writer.exec(SCHEMA);
      writer.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('schemaVersion', ?)").run(String(SCHEMA_VERSION));
      const reader = new Database(path, { readonly: true });
      return new SqliteStore(path, writer, reader, lock, options.maxGroupSize ?? MAX_GROUP);
    } catch (error) {
      writer?.close();
      await lock.release();
      if (error instanceof StoreCorruptError) throw error;
      throw new StoreCorruptError(path, (error as Error).message);
    }
  }

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.queue.enqueue(body);
  }

  private async writeBatch(batch: QueuedTransaction[]): Promise<void> {
    const lost = this.lock.compromised();
    if (lost !== undefined) {
      for (const job of batch) job.reject(new StoreClosedError(`the store lock was lost (${lost.message})`));
      return;
    }
    const tx = new SqliteTransaction(this.writeSql, this.cache);
    const done: Array<[QueuedTransaction, unknown]> = [];
    const run = (sql: string) => this.writeSql.get(sql).run();
    try {
      this.writer.exec('BEGIN IMMEDIATE');
    } catch (error) {
      this.noteBusy(error);
      for (const job of batch) job.reject(error);
      return;
    }
    // Another connection (an operator's sqlite3 shell, say) committed since our last batch: what the
    // writer remembers may be stale.
    const dataVersion = this.writeSql.get('PRAGMA data_version').pluck().get() as number;
    if (dataVersion !== this.seenDataVersion) this.cache.forget();
    this.seenDataVersion = dataVersion;
    for (const job of batch) {
      run('SAVEPOINT job');
      const writesBefore = tx.writes;
      try {
        const result = await job.body(tx);
        run('RELEASE job');
        done.push([job, result]);
      } catch (error) {
        this.noteBusy(error);
        run('ROLLBACK TO job');
        run('RELEASE job');
        this.cache.forget();
        tx.writes = writesBefore;
        job.reject(error);
      }
    }
    try {
      this.writer.exec('COMMIT');
    } catch (error) {
      this.noteBusy(error);
      this.cache.forget();
      if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
      for (const [job] of done) job.reject(error);
      return;
    }
    this.writesSinceCheckpoint += tx.writes;
    if (tx.writes > 0) this.committed.notify();
    for (const [job, result] of done) job.resolve(result);
  }

  async read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    if (this.queue.isClosed) throw new StoreClosedError('the store is closed');
    try {
      return await body(new SqliteReader(this.readSql));
    } catch (error) {
      this.noteBusy(error);
      throw error;
    }
  }

  /**
   * How many statements failed because SQLite stayed busy past its timeout (another connection, e.g. a
   * backup or an operator's sqlite3 shell, held the file). Each failed transaction rolled back alone.
   */
  get busyErrors(): number {
    return this.busy;
  }

  private noteBusy(error: unknown): void {
    if (isBusy(error)) this.busy++;
  }

  onCommit(listener: () => void): () => void {
    return this.committed.add(listener);
  }

  /**
   * Folds the write-ahead log into the database file without waiting for anyone (a PASSIVE checkpoint), once
   * {@link CHECKPOINT_AFTER_WRITES} rows were written since the last. Skipped while a group of transactions is
   * open on the writer; the next call, or SQLite's own bound, folds it.
   */
  async checkpoint(): Promise<void> {
    if (this.queue.isClosed || this.writer.inTransaction || this.writesSinceCheckpoint < CHECKPOINT_AFTER_WRITES) return;
    try {
      this.writer.pragma('wal_checkpoint(PASSIVE)');
      this.writesSinceCheckpoint = 0;
    } catch (error) {
      this.noteBusy(error);
      if (!isBusy(error)) throw error;
    }
  }

  async close(): Promise<void> {
    if (this.queue.isClosed) return;
    await this.queue.close();
    this.reader.close();
    this.writer.close();
    await this.lock.release();
  }
}
