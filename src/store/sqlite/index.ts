/**
 * The SQLite store. Importing it does not load better-sqlite3: {@link SqliteStore.open} does, on first use.
 * The only module outside this folder may import; everything else here is the store's own.
 * @module
 */
export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
