import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { ContractError } from '../contract/errors.js';
import type { FileStoreKind } from '../store/open-store.js';
import { isPostgresUrl } from '../store/open-store.js';
import { redactUrl } from '../store/postgres/index.js';

export const DEFAULT_STORE = join('.coven', 'automations.json');

/** The endings `--store` takes without `--store-kind`: the JSON store's and SQLite's. */
export const STORE_EXTENSIONS: Readonly<Record<string, FileStoreKind>> = {
  '.json': 'json',
  '.sqlite': 'sqlite',
  '.sqlite3': 'sqlite',
  '.db': 'sqlite',
};

/**
 * Where `--store` points: a store file (with the folder its sessions and default cwd root live in), or a
 * PostgreSQL database by connection string. A database has no folder of its own, so its sessions live in
 * the current directory's `.coven` folder, the default store's folder. `anchor` is the path a daemon's socket,
 * token and daemon.json are named after: the file itself, or for a database a name in that folder derived
 * from its (password-free) connection string, so a CLI in the same folder finds the daemon serving it.
 */
export type StoreLocation =
  | { kind: 'file'; file: string; folder: string; anchor: string }
  | { kind: 'postgres'; url: string; shown: string; folder: string; anchor: string };

/**
 * Reads `--store`: a `postgres://`/`postgresql://` URL selects PostgreSQL; a path must end in a store
 * extension unless `--store-kind` names the kind, so a typo never becomes a new JSON store of another name.
 *
 * @example
 * ```ts
 * storeLocation({ store: 'ops.sqlite' }); // { kind: 'file', file: '/abs/ops.sqlite', folder: '/abs', ... }
 * storeLocation({ store: 'ops.txt' });    // throws VALIDATION_FAILED naming --store
 * ```
 */
export function storeLocation(options: { store?: string; storeKind?: FileStoreKind }): StoreLocation {
  const given = options.store ?? DEFAULT_STORE;
  if (isPostgresUrl(given)) {
    if (options.storeKind !== undefined)
      throw new ContractError(
        'VALIDATION_FAILED',
        `--store-kind ${options.storeKind} names a file store, ` +
          `but --store ${redactUrl(given)} is a PostgreSQL database`,
        { field: '--store-kind', storeKind: options.storeKind },
      );
    const shown = redactUrl(given);
    const folder = resolve(dirname(DEFAULT_STORE));
    const digest = createHash('sha256').update(shown).digest('hex').slice(0, 16);
    return { kind: 'postgres', url: given, shown, folder, anchor: join(folder, `postgres-${digest}`) };
  }
  const file = resolve(given);
  const extension = extname(file).toLowerCase();
  if (options.storeKind === undefined && STORE_EXTENSIONS[extension] === undefined)
    throw new ContractError(
      'VALIDATION_FAILED',
      `--store ${given}: ${extension === '' ? 'no file extension' : `unknown extension ${extension}`}; ` +
        'use .json (JSON store), .sqlite, .sqlite3 or .db (SQLite), a postgres:// URL, or name the kind with --store-kind',
      { field: '--store', store: given, extension },
    );
  return { kind: 'file', file, folder: dirname(file), anchor: file };
}

/**
 * Refuses a read against a store file that does not exist: a read never creates a store (a daemon's store
 * always exists, since opening one writes it).
 */
export function requireExistingStore(location: StoreLocation, command: string): void {
  if (location.kind === 'file' && !existsSync(location.file))
    throw new ContractError(
      'NOT_FOUND',
      `no such store: ${location.file} (${command} reads a store and never creates one; run init or apply first)`,
      { kind: 'store', store: location.file },
    );
}
