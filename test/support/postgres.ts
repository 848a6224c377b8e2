import pg from 'pg';
import { afterEach, beforeAll, describe, inject, test, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { StoreConflictError, StreamSequenceError } from '../../src/store/store.js';

/** The connection string of database `name` in the run's throwaway cluster (Unix socket, no TCP). */
export function databaseUrl(socketDir: string, name: string): string {
  return `postgresql://postgres@/${name}?host=${encodeURIComponent(socketDir)}`;
}

let databases = 0;

/** Creates a new, empty database in the cluster and returns its connection string. */
export async function freshDatabase(socketDir: string, label: string): Promise<string> {
  const name = `${label.replace(/[^a-z0-9_]/g, '_')}_${process.pid}_${databases++}`;
  const admin = new pg.Client({ connectionString: databaseUrl(socketDir, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return databaseUrl(socketDir, name);
}

/**
 * A describe block that needs PostgreSQL: `body` gets the cluster's socket folder. Without the server binaries
 * the block is skipped with its reason printed; under CI (`CI=true`) a failing test stands in for it instead,
 * so a CI machine without PostgreSQL cannot pass by skipping.
 */
export function describePostgres(name: string, body: (socketDir: string) => void): void {
  const target = inject('postgres');
  if ('socketDir' in target) {
    describe(name, () => body(target.socketDir));
    return;
  }
  if (process.env.CI === 'true') {
    test(`${name}: PostgreSQL is required under CI`, () => {
      throw new Error(`no PostgreSQL cluster: ${target.unavailable}`);
    });
    return;
  }
  console.warn(`skipping "${name}": ${target.unavailable}`);
  describe.skip(name, () => body(''));
}

/** Runs `commit` again while it loses races with other stores (each loss wrote nothing); bounded. */
export async function untilCommitted<T>(commit: () => Promise<T>, attempts = 200): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await commit();
    } catch (error) {
      const lostRace = error instanceof StoreConflictError || error instanceof StreamSequenceError;
      if (!lostRace || attempt >= attempts) throw error;
    }
  }
}

/**
 * The SQL of every message the stores send while the spy is on, but a statement's one-time PREPARE and the commit
 * announcements (sent after the commit, on the group's connection when nothing listens).
 */
export function sentMessages(): { texts: () => string[] } {
  const spy = vi.spyOn(pg.Client.prototype, 'query');
  return {
    texts: () =>
      spy.mock.calls
        .map(([query]) => (typeof query === 'string' ? query : (query as pg.QueryConfig).text))
        .filter((text) => !text.startsWith('PREPARE') && !text.startsWith('SELECT pg_notify')),
  };
}

/**
 * Inside a describePostgres block: a fresh database named `name` for the block, and `open(schema)` giving a test a
 * store on that schema in it (`name` unless told), closed after the test.
 */
export function storePerTest(socketDir: string, name: string): { open: (schema?: string) => Promise<PostgresStore> } {
  let url: string;
  let store: PostgresStore | undefined;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, name);
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });
  return { open: async (schema = name) => (store = await PostgresStore.open(url, { schema })) };
}
