/**
 * The PostgreSQL store. Importing it does not load node-postgres: {@link PostgresStore.open} does, on first use.
 * The only module outside this folder may import; everything else here is the store's own.
 * @module
 */
export { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export { PostgresSchemaError, redactUrl, StoreUnavailableError } from './postgres-errors.js';
