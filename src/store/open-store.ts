import { rmSync } from 'node:fs';
import { extname } from 'node:path';
import { ContractError } from '../contract/errors.js';
import { JsonFileStore } from './json/index.js';
import { PostgresStore, redactUrl } from './postgres/index.js';
import { SqliteStore } from './sqlite/index.js';

/** The two file stores; both keep one file (plus SQLite's WAL) and a lock beside it. */
export type FileStoreKind = 'json' | 'sqlite';
/**
 * Every durable store {@link openStore} opens: the two file stores, or PostgreSQL from a connection string
 * (whose `file` is that string without its password, so callers that name "the store's file" still can).
 */
export type FileStore = JsonFileStore | SqliteStore | PostgresStore;
/** A PostgreSQL connection string: what selects the PostgreSQL store. */
export type PostgresUrl = `postgres://${string}` | `postgresql://${string}`;

/** File endings that select SQLite when no kind is named; everything else is the JSON store. */
const SQLITE_EXTENSIONS = new Set(['.sqlite', '.sqlite3', '.db']);

/** The kind a path selects: an explicit kind wins, else `.sqlite`/`.sqlite3`/`.db` mean SQLite. */
export function storeKindFor(file: string, kind?: FileStoreKind): FileStoreKind {
  return kind ?? (SQLITE_EXTENSIONS.has(extname(file).toLowerCase()) ? 'sqlite' : 'json');
}

/**
 * Removes a file store's files — the store file and what both stores keep beside it (the JSON journal, SQLite's
 * `-wal`/`-shm`/`-journal` and its commit watermark) — so the next open creates an empty store. Removing the store
 * file alone would leave a journal or watermark that proves a store existed, and the open would refuse it.
 *
 * @example
 * ```ts
 * removeFileStore('.coven/demo.json'); // the demo starts afresh on every run
 * const store = await openStore('.coven/demo.json');
 * ```
 */
export function removeFileStore(file: string): void {
  for (const path of [file, `${file}.journal`, `${file}-wal`, `${file}-shm`, `${file}-journal`, `${file}.commits`])
    rmSync(path, { force: true });
}

/** Whether `location` is a PostgreSQL connection string (`postgres://…` or `postgresql://…`) rather than a path. */
export function isPostgresUrl(location: string): location is PostgresUrl {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * Opens a durable store: PostgreSQL for a `postgres://…` or `postgresql://…` connection string, else a file
 * store chosen from `kind` or the file's extension. A kind named with a connection string is refused: a
 * database is not a file.
 *
 * @example
 * ```ts
 * const store = await openStore('automations.sqlite'); // SqliteStore
 * const json = await openStore('automations.json');    // JsonFileStore
 * const shared = await openStore('postgres://coven@db.internal/automations'); // PostgresStore
 * ```
 */
export function openStore(url: PostgresUrl): Promise<PostgresStore>;
export function openStore(file: string, kind?: FileStoreKind): Promise<FileStore>;
export async function openStore(location: string, kind?: FileStoreKind): Promise<FileStore> {
  if (isPostgresUrl(location)) {
    if (kind !== undefined)
      throw new ContractError(
        'VALIDATION_FAILED',
        `the store kind ${kind} names a file store, but ${redactUrl(location)} is a PostgreSQL connection string`,
        { kind },
      );
    return PostgresStore.open(location);
  }
  return storeKindFor(location, kind) === 'sqlite' ? SqliteStore.open(location) : JsonFileStore.open(location);
}
