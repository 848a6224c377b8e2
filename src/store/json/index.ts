/**
 * The JSON-file store: a snapshot file, a journal beside it and a lock file (see FORMAT.md in this folder).
 * The only module outside this folder may import; everything else here is the store's own.
 * @module
 */
export { JsonFileStore, type JsonFileStoreOptions } from './json-file-store.js';
export { JSON_STORE_FORMAT, JSON_STORE_FORMAT_VERSION } from './json-document.js';
