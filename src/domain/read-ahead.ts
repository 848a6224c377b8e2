import type { StoredRecord, StoreReader } from '../store/store.js';

/** How many records one read-ahead statement asks for, unless told otherwise. */
const PAGE = 256;

/**
 * The records of `kind` among `ids` that exist, read in a few statements where the store reads many records in one
 * (PostgreSQL, `getMany`): a pass reads what each of its items looks at first before working them, instead of a
 * round trip each. Undefined where the store cannot (there a read per record costs no round trip). A hint as of this
 * read, never a decision: each item is decided again, in its own transaction, on what that transaction reads.
 *
 * @example
 * const attempts = await store.read((r) => readAhead(r, 'attempt', ids));
 * const known = attempts?.get(ids[0]);
 */
export async function readAhead<T>(
  reader: StoreReader,
  kind: string,
  ids: readonly string[],
  page = PAGE,
): Promise<Map<string, StoredRecord<T>> | undefined> {
  if (reader.getMany === undefined) return undefined;
  const found = new Map<string, StoredRecord<T>>();
  for (let i = 0; i < ids.length; i += page) {
    for (const record of await reader.getMany<T>(kind, ids.slice(i, i + page))) found.set(record.id, record);
  }
  return found;
}

/**
 * How a pass over `ids` finds each record of `kind`: from one {@link readAhead} where the store has `getMany`, else
 * a get each (in the same read).
 */
export async function lookupAhead<T>(
  reader: StoreReader,
  kind: string,
  ids: readonly string[],
): Promise<(id: string) => Promise<StoredRecord<T> | undefined>> {
  const ahead = await readAhead<T>(reader, kind, ids);
  return ahead === undefined ? (id) => reader.get<T>(kind, id) : async (id) => ahead.get(id);
}
