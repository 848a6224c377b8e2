import Database from 'better-sqlite3';
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import type { CommittedState } from '../../src/store/layered-state.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/store.js';

/** What a store holds, counted where it is kept: records per kind, log entries per stream kind, and files. */
export interface Residue {
  records: Record<string, number>;
  entries: Record<string, number>;
  /** Streams with at least one entry (a stream's head lives in its entries on every store). */
  streams: number;
  /** Rows of the SQLite `meta` table, files next to a file store. */
  other: Record<string, number>;
  /** SQLite: bytes of record and entry data (a figure to print; ids and instants make it vary slightly). */
  bytes?: number;
}

export const residueTotal = (r: Residue) =>
  [r.records, r.entries, r.other].flatMap((m) => Object.values(m)).reduce((a, b) => a + b, 0) + r.streams;

function tally(into: Record<string, number>, key: string, by = 1): void {
  into[key] = (into[key] ?? 0) + by;
}

const streamKind = (stream: string) => stream.slice(0, stream.indexOf('/'));

/** The committed state of the in-memory stores: counting it is the only way to see every kind they hold. */
function fromState(state: CommittedState): Pick<Residue, 'records' | 'entries' | 'streams'> {
  const records: Record<string, number> = {};
  for (const kind of state.kinds()) {
    const n = state.sortedIds(kind).length;
    if (n > 0) records[kind] = n;
  }
  const entries: Record<string, number> = {};
  const streams = new Set<string>();
  for (const entry of state.retainedFeed()) {
    tally(entries, streamKind(entry.stream));
    streams.add(entry.stream);
  }
  return { records, entries, streams: streams.size };
}

function sqlRows(rows: Array<{ k: string; n: number | string }>): Record<string, number> {
  return Object.fromEntries(rows.map((r) => [r.k, Number(r.n)]));
}

/**
 * Counts everything `store` holds. For a file store, `store` must be open (its state is read) and the files of
 * its folder are counted too; the folder must hold this store only.
 */
export async function residueOf(store: Store, postgresUrl?: string): Promise<Residue> {
  if (store instanceof MemoryStore) {
    const state = (store as unknown as { state: CommittedState }).state;
    return { ...fromState(state), other: {} };
  }
  if (store instanceof JsonFileStore) {
    const state = (store as unknown as { db: { data: { committed: CommittedState } } }).db.data.committed;
    const files = readdirSync(dirname(store.file)).length;
    return { ...fromState(state), other: { files } };
  }
  if (store instanceof SqliteStore) {
    const db = new Database(store.file, { readonly: true, fileMustExist: true });
    try {
      const records = sqlRows(db.prepare('SELECT kind AS k, COUNT(*) AS n FROM records GROUP BY kind').all() as never);
      const entries = sqlRows(
        db
          .prepare("SELECT substr(stream, 1, instr(stream, '/') - 1) AS k, COUNT(*) AS n FROM log GROUP BY k")
          .all() as never,
      );
      const streams = (db.prepare('SELECT COUNT(DISTINCT stream) AS n FROM log').get() as { n: number }).n;
      const meta = (db.prepare('SELECT COUNT(*) AS n FROM meta').get() as { n: number }).n;
      const files = readdirSync(dirname(store.file)).length;
      const bytes = (
        db
          .prepare('SELECT (SELECT SUM(length(data)) FROM records) + (SELECT SUM(length(data)) FROM log) AS n')
          .get() as { n: number }
      ).n;
      return { records, entries, streams, other: { meta, files }, bytes };
    } finally {
      db.close();
    }
  }
  if (store instanceof PostgresStore && postgresUrl !== undefined) {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      const q = async (sql: string) => (await client.query<{ k: string; n: string }>(sql)).rows;
      const records = sqlRows(await q('SELECT kind AS k, COUNT(*) AS n FROM coven.records GROUP BY kind'));
      const entries = sqlRows(
        await q("SELECT split_part(stream, '/', 1) AS k, COUNT(*) AS n FROM coven.log GROUP BY k"),
      );
      const streams = Number((await q("SELECT '' AS k, COUNT(DISTINCT stream) AS n FROM coven.log"))[0]!.n);
      return { records, entries, streams, other: {} };
    } finally {
      await client.end();
    }
  }
  throw new Error('residueOf: an unknown store (or a PostgreSQL store without its url)');
}
