import { existsSync, readFileSync } from 'node:fs';
import type { MemoryStore } from '../../src/store/memory-store.js';

/**
 * Every byte a JSON store keeps: its snapshot and its journal (commits append to the journal, so comparing
 * the snapshot alone would miss them). For "refused input leaves the store byte-identical" checks.
 */
export function jsonStoreBytes(file: string): string {
  const journal = `${file}.journal`;
  return readFileSync(file, 'utf8') + '\u0000' + (existsSync(journal) ? readFileSync(journal, 'utf8') : '');
}

/**
 * Every byte a SQLite store keeps durably: its database file and its write-ahead log (a commit lands in the
 * log first). The `-shm` index is left out: it is shared memory readers rebuild, not data.
 */
export function sqliteStoreBytes(file: string): Buffer {
  const wal = `${file}-wal`;
  return Buffer.concat([readFileSync(file), Buffer.from([0]), existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0)]);
}

/**
 * A memory store's whole committed state as text: every record of every kind and the feed, read through the
 * public reader. The kinds come from its committed state, since the port has no call that lists them.
 */
export async function memoryStoreState(store: MemoryStore): Promise<string> {
  const kinds = (store as unknown as { state: { kinds(): string[] } }).state.kinds().sort();
  return store.read(async (reader) => {
    const records = await Promise.all(kinds.map(async (kind) => [kind, await reader.list(kind)] as const));
    return JSON.stringify({ records, feed: await reader.readFeed({ after: -1 }) });
  });
}
