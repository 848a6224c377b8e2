import {
  closeSync,
  existsSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import type Database from 'better-sqlite3';
import type { SqliteDriver } from './driver.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { entryChecksum, recordChecksum } from './sqlite-rows.js';
import { StoreCorruptError } from '../store.js';
import { RETIRED_INDEX_KINDS } from '../live-work.js';
import { readCommitCount, type CommitCount } from './sqlite-watermark.js';

/**
 * 2 adds a CRC-32 column (`crc`) to `records` and `log`, checked on every read of a row. A store of
 * version 1 gets it on its first open by this build, computed from the rows as they are then. 3 indexes live
 * work (records not terminal) and removes the index records that earlier engines rewrote for it. 4 indexes
 * occurrences by slot and runs by start (the operator's timelines); its migration is the CREATE INDEX alone.
 */
export const SCHEMA_VERSION = 4;
const MIGRATES_FROM = new Set(['1', '2', '3']);
/** The first 16 bytes of every SQLite database file. */
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** Files beside the database: SQLite's, and the commit watermark (`sqlite-watermark.ts`). */
const SIDECARS = ['-wal', '-shm', '-journal', '.commits'];
/**
 * Databases (file plus write-ahead log) up to this size get SQLite's `integrity_check` at open. It reads
 * every page and checks that every index agrees with its table, which the row checksums cannot see (an
 * index entry changed so that a record is not found). Its cost grows with the file (docs/stores-and-scale-out.md), so
 * past this bound an open relies on the row checksums and on SQLite's page checks as pages are read.
 */
export const INTEGRITY_CHECK_BYTES = 128 * 1_048_576;

/**
 * A CRC-32 of the schema (every table's and index's definition): kept in `meta` and checked at open, because
 * SQLite takes a changed definition as it is — a flipped letter in an index's WHERE clause makes it an index
 * of something else, or a query fail with an error no check names. Root pages are left out (SQLite moves
 * them itself), as are SQLite's own statistics tables.
 */
export function schemaChecksum(db: Database.Database): string {
  const rows = db
    .prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%' ORDER BY type, name",
    )
    .raw()
    .all() as unknown[][];
  return crc32(JSON.stringify(rows)).toString(16).padStart(8, '0');
}

/** Writes the schema's checksum when it is not the one stored (a new store, a migration, a new index). */
export function recordSchemaChecksum(db: Database.Database): void {
  const sum = schemaChecksum(db);
  const stored = db.prepare("SELECT value FROM meta WHERE key = 'schemaChecksum'").pluck().get();
  if (stored !== sum) db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schemaChecksum', ?)").run(sum);
}

const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0);

/**
 * Checks an existing file's 100-byte header before SQLite sees it, so a file that is not a database —
 * empty, truncated below a page, another format — is refused untouched rather than turned into a new store.
 * Returns false when there is no file at `path` (only then is a new store created).
 */
export function checkDatabaseHeader(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new StoreCorruptError(path, `unreadable (${(error as Error).message})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new StoreCorruptError(path, 'not a regular file');
    if (stat.size === 0)
      throw new StoreCorruptError(
        path,
        'the file is empty (0 bytes), not an SQLite database; only a path that does not exist gets a new store',
      );
    const header = Buffer.alloc(100);
    const read = readSync(fd, header, 0, header.length, 0);
    if (read < header.length || !header.subarray(0, 16).equals(SQLITE_MAGIC))
      throw new StoreCorruptError(path, 'not an SQLite database (it does not begin with "SQLite format 3")');
    const rawPageSize = header.readUInt16BE(16);
    const pageSize = rawPageSize === 1 ? 65_536 : rawPageSize;
    const wellFormed =
      pageSize >= 512 &&
      (pageSize & (pageSize - 1)) === 0 &&
      [1, 2].includes(header[18]!) &&
      [1, 2].includes(header[19]!) &&
      header[21] === 64 &&
      header[22] === 32 &&
      header[23] === 32;
    if (!wellFormed) throw new StoreCorruptError(path, 'its SQLite header is malformed');
    if (stat.size % pageSize !== 0)
      throw new StoreCorruptError(
        path,
        `its size (${stat.size} bytes) is not a whole number of ${pageSize}-byte pages; the file may be truncated`,
      );
    // The header's page count is current when its "valid for" counter equals the change counter; a
    // write-ahead log may hold pages past the file's end until it is folded in.
    const pages = header.readUInt32BE(28);
    const countValid = header.readUInt32BE(24) === header.readUInt32BE(92);
    if (countValid && pages * pageSize > stat.size && sizeOf(`${path}-wal`) === 0) {
      throw new StoreCorruptError(
        path,
        `it holds ${stat.size / pageSize} pages where its header counts ${pages}; the file is truncated`,
      );
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

/** The sidecar files SQLite may create beside `path` that do not exist now: what a refused open removes again. */
export function absentSidecars(path: string): string[] {
  return SIDECARS.map((suffix) => `${path}${suffix}`).filter((file) => !existsSync(file));
}

/**
 * Creates a new, empty store at `path` (which does not exist): built under a temp name, made durable and
 * renamed into place, so a crash while creating leaves no half-made file at `path` (a 0-byte file there is
 * refused, never taken for a new store).
 */
export function createDatabase(Driver: SqliteDriver, path: string, schema: string, pageSize: number): void {
  const prefix = `.${basename(path)}.`;
  for (const name of readdirSync(dirname(path))) {
    if (name.startsWith(prefix) && name.endsWith('.creating')) rmSync(join(dirname(path), name), { force: true });
  }
  const temp = join(dirname(path), `${prefix}${process.pid}.creating`);
  const fd = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
    const db = new Driver(temp);
    try {
      db.pragma(`page_size = ${pageSize}`);
      db.pragma('journal_mode = WAL');
      db.exec(schema);
      db.prepare("INSERT INTO meta (key, value) VALUES ('schemaVersion', ?)").run(String(SCHEMA_VERSION));
      recordSchemaChecksum(db);
    } finally {
      db.close();
    }
    fsyncSync(fd);
  } catch (error) {
    rmSync(temp, { force: true });
    for (const suffix of SIDECARS) rmSync(`${temp}${suffix}`, { force: true });
    throw error;
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * Checks an existing database read-only, before anything may write to it: a foreign or newer schema and
 * anything SQLite's integrity check finds are refused with the file untouched (a read-only connection never
 * folds a write-ahead log into the file). Returns the schema version found and what the database says of its
 * commits.
 */
export function inspectDatabase(
  Driver: SqliteDriver,
  path: string,
  integrityCheckBytes: number,
): { version: string; count: CommitCount } {
  const db = new Driver(path, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    if (!tables.includes('meta')) throw new StoreCorruptError(path, 'not a coven-automata SQLite store');
    const version = db.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").pluck().get() as
      string | undefined;
    if (version !== String(SCHEMA_VERSION) && !MIGRATES_FROM.has(version ?? '')) {
      throw new StoreCorruptError(
        path,
        `schema version ${String(version)} is not supported ` +
          `(this build reads ${[...MIGRATES_FROM, SCHEMA_VERSION].join(', ')})`,
      );
    }
    const sum = db.prepare("SELECT value FROM meta WHERE key = 'schemaChecksum'").pluck().get();
    if (version === String(SCHEMA_VERSION) && sum !== schemaChecksum(db))
      throw new StoreCorruptError(
        path,
        'its schema is not the one this store recorded (a table or index definition changed)',
      );
    if (sizeOf(path) + sizeOf(`${path}-wal`) <= integrityCheckBytes) {
      const problems = db.pragma('integrity_check(20)', { simple: false }) as Array<{ integrity_check: string }>;
      if (problems.length !== 1 || problems[0]!.integrity_check !== 'ok') {
        throw new StoreCorruptError(
          path,
          `SQLite's integrity check failed: ${problems.map((p) => p.integrity_check).join('; ')}`,
        );
      }
    }
    return { version: version!, count: readCommitCount(db) };
  } finally {
    db.close();
  }
}

/**
 * Brings the tables of a store made before {@link SCHEMA_VERSION} to it, inside the caller's transaction
 * (after the schema's CREATE … IF NOT EXISTS): adds the checksum columns and computes them from the rows
 * as they are, which the integrity check at open has just read.
 */
export function addChecksums(db: Database.Database): void {
  for (const table of ['records', 'log']) {
    const columns = db.pragma(`table_info(${table})`) as Array<{ name: string }>;
    if (!columns.some((c) => c.name === 'crc')) db.exec(`ALTER TABLE ${table} ADD COLUMN crc INTEGER`);
  }
  db.function('coven_record_crc', { deterministic: true }, (kind, id, version, terminal, data) =>
    recordChecksum(kind as string, id as string, version as number, terminal as number, data as string),
  );
  db.function('coven_entry_crc', { deterministic: true }, (stream, sequence, position, data) =>
    entryChecksum(stream as string, sequence as number, position as number, data as string),
  );
  db.exec(
    'UPDATE records SET crc = coven_record_crc(kind, id, version, terminal, data); ' +
      'UPDATE log SET crc = coven_entry_crc(stream, sequence, position, data);',
  );
}

/**
 * Removes the index records of live work earlier versions kept (`live-occurrence` and the like), inside the
 * caller's migration transaction: the indexes of schema version 3 answer what they did.
 */
export function retireIndexRecords(db: Database.Database): void {
  db.prepare(`DELETE FROM records WHERE kind IN (${RETIRED_INDEX_KINDS.map(() => '?').join(', ')})`).run(
    ...RETIRED_INDEX_KINDS,
  );
}
