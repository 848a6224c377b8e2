import { chmodSync, existsSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { ContractError } from '../../contract/errors.js';
import { CommitQueue, type QueuedTransaction } from '../commit-queue.js';
import { WriterCache } from './sqlite-writer-cache.js';
import { LogFolder } from './log-folder.js';
import { loadSqliteDriver, type SqliteDriver } from './driver.js';
import { acquireStoreLock, type HeldLock } from '../file-lock.js';
import { makePrivateFolder, PRIVATE_FILE_MODE, refuseReadOnly } from '../private-files.js';
import {
  absentSidecars,
  addChecksums,
  retireIndexRecords,
  checkDatabaseHeader,
  createDatabase,
  inspectDatabase,
  INTEGRITY_CHECK_BYTES,
  recordSchemaChecksum,
  SCHEMA_VERSION,
} from './sqlite-open.js';
import { asStoreError } from './sqlite-rows.js';
import { TIMELINE_INDEXES } from './timeline-queries.js';
import {
  checkCommitWatermark,
  checkpointWhole,
  CommitWatermark,
  countCommit,
  MARK_CLOSED_SQL,
  refuseOrphanWatermark,
  type CommitCount,
} from './sqlite-watermark.js';
import {
  LIVE_WORK_INDEXES,
  SqliteReader,
  SqliteTransaction,
  Statements,
  VERSIONS_INDEXED,
} from './sqlite-transaction.js';
import {
  CommitListeners,
  type CommitListener,
  StoreClosedError,
  StoreCorruptError,
  type Store,
  type StoreReader,
  type StoreTransaction,
} from '../store.js';

export interface SqliteStoreOptions {
  /** `FULL` (default) fsyncs every commit; `NORMAL` trades the last commits on power loss for speed under WAL. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Most queued transactions folded into one SQLite transaction. */
  maxGroupSize?: number;
  /** How long SQLite waits for a lock another connection holds before the transaction fails (default 5 s). */
  busyTimeoutMs?: number;
  /**
   * Databases up to this many bytes (file plus write-ahead log) get SQLite's `integrity_check` at open;
   * default {@link INTEGRITY_CHECK_BYTES}, 0 never, `Infinity` always.
   */
  integrityCheckBytes?: number;
}

const MAX_GROUP = 256;
/**
 * Write-ahead log SQLite folds into the database file by itself, inside whichever commit crosses it. The engine
 * folds it after each pass instead ({@link SqliteStore.checkpoint}): a burst's index pages are then copied once
 * each rather than once per 1000-page checkpoint, and not on a commit's latency path. This bound only holds the
 * log (and its file, via journal_size_limit) when no pass ends.
 */
const WAL_CHECKPOINT_BYTES = 32 * 1_048_576;
/** Long enough to outlast a WAL checkpoint or a brief outside reader; short enough that a stuck lock surfaces. */
const BUSY_TIMEOUT_MS = 5_000;
/**
 * Page size of a new store (an existing file keeps its own). A due burst dirties about one index leaf per
 * occurrence in each index and the WAL writes whole pages, so smaller pages cost less per commit; records
 * (≤ 2 KB) still fit a page. The price is space: rows pack worse, so what retention leaves per occurrence
 * grows. Smaller pages still were slower (bench/README.md, Store design notes).
 */
const NEW_STORE_PAGE_SIZE = 2_048;

/** The partial index over the ids and versions of one kind's records. */
const versionsIndex = (kind: string, index: string) =>
  `CREATE INDEX IF NOT EXISTS ${index} ON records (kind, id, version) WHERE kind = '${kind}';`;

// Records are 1-2 KB of JSON: a rowid table with a separate (kind, id) index stores and updates them in
// less space and time than a WITHOUT ROWID table. Stores made with the earlier WITHOUT ROWID layout keep it;
// every statement here works on both layouts (the layout is not part of the schema version). `crc`: see
// sqlite-rows.ts (NULL never matches, so a row written without one is refused).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  kind TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, terminal INTEGER NOT NULL, data TEXT NOT NULL,
  crc INTEGER,
  UNIQUE (kind, id)
);
CREATE TABLE IF NOT EXISTS log (
  position INTEGER PRIMARY KEY, stream TEXT NOT NULL, sequence INTEGER NOT NULL, data TEXT NOT NULL, crc INTEGER,
  UNIQUE (stream, sequence)
);
-- Defence in depth under the machines: the database itself refuses a second run for one occurrence fence
-- and a session bound to two attempts, even if engine logic were wrong.
CREATE UNIQUE INDEX IF NOT EXISTS one_run_per_fence ON records (
  json_extract(data, '$.snapshot.context.occurrenceId'), json_extract(data, '$.snapshot.context.fenceGeneration')
) WHERE kind = 'run';
CREATE UNIQUE INDEX IF NOT EXISTS one_session_per_attempt
  ON records (json_extract(data, '$.snapshot.context.sessionId'))
  WHERE kind = 'attempt' AND json_extract(data, '$.snapshot.context.sessionId') IS NOT NULL;
-- Every pass lists the ids and versions of these kinds (versions()); from this index alone, instead of one
-- table row per record. Few rows, so the index stays a few pages that their writes keep in cache.
${[...VERSIONS_INDEXED].map(([kind, index]) => versionsIndex(kind, index)).join('\n')}
-- What every pass asks: the live occurrences and attempts, and an automation's (schema version 3).
${LIVE_WORK_INDEXES}
-- What the operator pages through: occurrences by slot and runs by start, newest first (schema version 4).
${TIMELINE_INDEXES}
`;

/** The writer's settings; WAL mode is the file's own (set when it was created) and kept by this. */
function configure(writer: Database.Database, options: SqliteStoreOptions): void {
  writer.pragma('journal_mode = WAL');
  writer.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  writer.pragma(`busy_timeout = ${options.busyTimeoutMs ?? BUSY_TIMEOUT_MS}`);
  const pageSize = writer.pragma('page_size', { simple: true }) as number;
  writer.pragma(`wal_autocheckpoint = ${Math.ceil(WAL_CHECKPOINT_BYTES / pageSize)}`);
  writer.pragma(`journal_size_limit = ${WAL_CHECKPOINT_BYTES}`);
}

/** Opens the writer on a checked (or new) database and brings its schema to this build's. */
function openWriter(Driver: SqliteDriver, path: string, options: SqliteStoreOptions) {
  const writer = new Driver(path, { fileMustExist: true });
  try {
    configure(writer, options);
    writer.transaction(() => {
      writer.exec(SCHEMA);
      const version = writer.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").pluck().get() as
        string | undefined;
      if (version !== String(SCHEMA_VERSION)) {
        if (version === '1') addChecksums(writer);
        retireIndexRecords(writer);
        writer
          .prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schemaVersion', ?)")
          .run(String(SCHEMA_VERSION));
      }
      recordSchemaChecksum(writer);
    })();
    return writer;
  } catch (error) {
    writer.close();
    throw error;
  }
}

/** SQLite gave up waiting for a lock (after `busy_timeout`): another connection held the database. */
const isBusy = (error: unknown) => /^SQLITE_(BUSY|LOCKED)/.test((error as { code?: string }).code ?? '');

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
  private readonly folder: LogFolder;
  /** Commits in the database, as `meta.commits` counts them (each one that wrote something). */
  private commits = 0;
  /** Why commits stopped: the watermark could not be written after one. */
  private broken: string | undefined;
  /** Whether this process committed (and so marked the store open: only then does close mark it closed). */
  private committedHere = false;
  /** Whether the database file itself holds the open mark (see sqlite-watermark.ts). */
  private markedOpen = false;

  private constructor(
    readonly file: string,
    private readonly writer: Database.Database,
    private readonly reader: Database.Database,
    private readonly lock: HeldLock,
    maxGroup: number,
    private readonly watermark: CommitWatermark,
  ) {
    this.queue = new CommitQueue(maxGroup, (batch) => this.writeBatch(batch));
    this.writeSql = new Statements(writer, file);
    this.readSql = new Statements(reader, file);
    this.folder = new LogFolder(file, writer, (error) => {
      this.noteBusy(error);
      return isBusy(error);
    });
  }

  /**
   * Opens the store at `file`, creating it only when no file is there. An existing file is checked before
   * anything writes to it — its header, then read-only its schema and (up to `integrityCheckBytes`) SQLite's
   * integrity check — and refused untouched with {@link StoreCorruptError}, leaving no `-wal`/`-shm` behind;
   * a read-only file is refused with {@link StoreReadOnlyError}, and a missing better-sqlite3 package with
   * {@link StoreDriverMissingError} (before anything is created).
   */
  static async open(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const Driver = await loadSqliteDriver();
    const path = resolve(file);
    makePrivateFolder(dirname(path));
    const lock = await acquireStoreLock(path);
    const sidecars = absentSidecars(path);
    let writer: Database.Database | undefined;
    let reader: Database.Database | undefined;
    let watermark: CommitWatermark | undefined;
    try {
      let found: CommitCount = { commits: 0, closedCleanly: true };
      if (checkDatabaseHeader(path)) {
        refuseReadOnly(path);
        found = inspectDatabase(Driver, path, options.integrityCheckBytes ?? INTEGRITY_CHECK_BYTES).count;
        checkCommitWatermark(path, found);
      } else {
        refuseOrphanWatermark(path);
        createDatabase(Driver, path, SCHEMA, NEW_STORE_PAGE_SIZE);
      }
      // SQLite gives its -wal and -shm the database file's mode: the inspection may have made them already.
      for (const own of [path, `${path}-wal`, `${path}-shm`])
        if (own === path || existsSync(own)) chmodSync(own, PRIVATE_FILE_MODE);
      writer = openWriter(Driver, path, options);
      watermark = await CommitWatermark.open(path, found.commits, (options.synchronous ?? 'FULL') === 'FULL');
      reader = new Driver(path, { readonly: true });
      const store = new SqliteStore(path, writer, reader, lock, options.maxGroupSize ?? MAX_GROUP, watermark);
      store.commits = found.commits;
      return store;
    } catch (error) {
      reader?.close();
      await watermark?.close();
      writer?.close();
      for (const sidecar of sidecars) rmSync(sidecar, { force: true });
      await lock.release();
      if (error instanceof ContractError) throw error;
      throw new StoreCorruptError(path, (error as Error).message);
    }
  }

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.queue.enqueue(body);
  }

  private async writeBatch(batch: QueuedTransaction[]): Promise<void> {
    const lost = this.lock.compromised();
    const stopped = lost === undefined ? this.broken : `the store lock was lost (${lost.message})`;
    if (stopped !== undefined) {
      for (const job of batch) job.reject(new StoreClosedError(stopped));
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
    let routine = true;
    for (const job of batch) {
      run('SAVEPOINT job');
      const writesBefore = tx.writes;
      try {
        const result = await job.body(tx);
        tx.flush();
        run('RELEASE job');
        if (!tx.jobRoutine && tx.writes > writesBefore) routine = false;
        tx.jobRoutine = false;
        done.push([job, result]);
      } catch (error) {
        this.noteBusy(error);
        tx.jobRoutine = false;
        tx.discardStaged();
        run('ROLLBACK TO job');
        run('RELEASE job');
        this.cache.forget();
        tx.writes = writesBefore;
        job.reject(asStoreError(this.file, error));
      }
    }
    try {
      if (tx.writes > 0) countCommit(this.writer, this.commits + 1, this.markedOpen);
      this.writer.exec('COMMIT');
    } catch (error) {
      this.noteBusy(error);
      this.cache.forget();
      if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
      for (const [job] of done) job.reject(error);
      return;
    }
    this.folder.wrote(tx.writes);
    if (tx.writes > 0 && !(await this.acknowledgeCommit(done))) return;
    if (tx.writes > 0) this.committed.notify('local', routine);
    for (const [job, result] of done) job.resolve(result);
  }

  /**
   * Writes the watermark of a durable commit before it is acknowledged. If that fails, the commit is in the
   * database but could not be made provable: its transactions fail and the store takes no further commit.
   */
  private async acknowledgeCommit(done: Array<[QueuedTransaction, unknown]>): Promise<boolean> {
    this.commits += 1;
    this.committedHere = true;
    // The first commit marked the store open; copied into the database file before it is acknowledged.
    if (!this.markedOpen) this.markedOpen = checkpointWhole(this.writer);
    try {
      await this.watermark.write(this.commits);
      return true;
    } catch (error) {
      this.broken = `the commit watermark could not be written (${(error as Error).message})`;
      const failure = new StoreClosedError(`${this.broken}; the last commit is in the database, unacknowledged`);
      for (const [job] of done) job.reject(failure);
      return false;
    }
  }

  async read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    if (this.queue.isClosed) throw new StoreClosedError('the store is closed');
    try {
      return await body(new SqliteReader(this.readSql));
    } catch (error) {
      this.noteBusy(error);
      throw asStoreError(this.file, error);
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

  onCommit(listener: CommitListener): () => void {
    return this.committed.add(listener);
  }

  /**
   * Folds the write-ahead log into the database file once enough rows were written since the last fold, on a
   * connection in a thread of its own ({@link LogFolder}): commits go on meanwhile.
   */
  async checkpoint(): Promise<void> {
    if (!this.queue.isClosed) await this.folder.fold();
  }

  async close(): Promise<void> {
    if (this.queue.isClosed) return;
    await this.queue.close();
    // The checkpoint thread's connection closes first, so the writer's close below is the last one.
    await this.folder.close();
    try {
      // Closing the last connection copies the log into the database file: with it, this mark (a file alone
      // is a clean copy).
      if (this.committedHere && this.lock.compromised() === undefined && this.broken === undefined)
        this.writer.exec(MARK_CLOSED_SQL);
    } finally {
      this.reader.close();
      this.writer.close();
      await this.watermark.close();
      await this.lock.release();
    }
  }
}
