import { extname } from 'node:path';
import { JsonFileStore } from './json/index.js';
import { SqliteStore } from './sqlite/index.js';

/** The two durable stores; both keep one file (plus SQLite's WAL) and a lock beside it. */
export type FileStoreKind = 'json' | 'sqlite';
export type FileStore = JsonFileStore | SqliteStore;

/** File endings that select SQLite when no kind is named; everything else is the JSON store. */
const SQLITE_EXTENSIONS = new Set(['.sqlite', '.sqlite3', '.db']);

/** The kind a path selects: an explicit kind wins, else `.sqlite`/`.sqlite3`/`.db` mean SQLite. */
export function storeKindFor(file: string, kind?: FileStoreKind): FileStoreKind {
  return kind ?? (SQLITE_EXTENSIONS.has(extname(file).toLowerCase()) ? 'sqlite' : 'json');
}

/**
 * Opens a durable store, choosing the implementation from `kind` or the file's extension.
 *
 * @example
 * ```ts
 * const store = await openStore('automations.sqlite'); // SqliteStore
 * const json = await openStore('automations.json');    // JsonFileStore
 * ```
 */
export async function openStore(file: string, kind?: FileStoreKind): Promise<FileStore> {
  return storeKindFor(file, kind) === 'sqlite' ? SqliteStore.open(file) : JsonFileStore.open(file);
}
