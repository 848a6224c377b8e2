// Where a bench cell (or bench/burst.ts) keeps its store: a file in a temporary folder, or a PostgreSQL cluster of its own started for
// the cell (server binaries from test/support/postgres-cluster.ts), with how to open it and measure its size.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore, type FileStoreKind } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import { startCluster, type PostgresCluster } from '../test/support/postgres-cluster.js';

/** The stores a cell can measure. */
export type CellStoreKind = FileStoreKind | 'postgres';

export interface CellStore {
  /** What `openStore` is given: the file's path or the cluster's connection string. */
  readonly location: string;
  /** The cell's own PostgreSQL cluster (PostgreSQL cells only). */
  readonly cluster?: PostgresCluster;
  open(): Promise<Store>;
  /** Bytes the store holds now: its folder's files, or the relations of the store's schema (tables, indexes, TOAST). */
  bytes(): Promise<number>;
  /** Removes the folder and stops the cluster. */
  dispose(): Promise<void>;
}

// The size PostgreSQL itself reports for the store's tables with their indexes and TOAST: the data directory's
// size would count WAL segments, which are preallocated 16 MB at a time and recycled.
const SCHEMA_BYTES = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'coven' AND c.relkind = 'r'`;

async function schemaBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(SCHEMA_BYTES);
    return Number(rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

/** A new, empty store of `kind` for one cell. */
export async function cellStore(kind: CellStoreKind): Promise<CellStore> {
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-slo-'));
  if (kind === 'postgres') {
    const cluster = await startCluster();
    return {
      location: cluster.url,
      cluster,
      open: () => openStore(cluster.url),
      bytes: () => schemaBytes(cluster.url),
      dispose: async () => {
        await cluster.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const file = join(dir, kind === 'sqlite' ? 'store.sqlite' : 'store.json');
  return {
    location: file,
    open: () => openStore(file, kind),
    bytes: async () => readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
