import { join } from 'node:path';
import pg from 'pg';
import { beforeAll, expect, test } from 'vitest';
import { openStore, type PostgresUrl } from '../../src/store/open-store.js';
import { PostgresSchemaError, PostgresStore } from '../../src/store/postgres/index.js';
import { MIGRATIONS, SCHEMA_VERSION, STORE_FORMAT } from '../../src/store/postgres/postgres-schema.js';
import { StoreConflictError, type Store } from '../../src/store/store.js';
import { describePostgres, freshDatabase, untilCommitted } from '../support/postgres.js';
import { describeStoreConformance } from './store-conformance.js';

describePostgres('PostgreSQL store', (socketDir) => {
  let url: Promise<string> | undefined;
  let schemas = 0;
  const database = () => (url ??= freshDatabase(socketDir, 'conformance'));
  const stores = new WeakMap<Store, string>();
  // The same port, with the default of one group at a time and with four groups written at once.
  for (const parallelGroups of [1, 4]) {
    describeStoreConformance(parallelGroups === 1 ? 'PostgreSQL' : `PostgreSQL, ${parallelGroups} groups at once`, {
      gappedPositions: true,
      create: async () => {
        const schema = `conformance_${schemas++}`;
        const store = await PostgresStore.open(await database(), { schema, parallelGroups });
        stores.set(store, schema);
        return store;
      },
      reopen: async (store: Store) => {
        await store.close();
        const schema = stores.get(store)!;
        const again = await PostgresStore.open(await database(), { schema, parallelGroups });
        stores.set(again, schema);
        return again;
      },
    });
  }

  test('with several groups at once, a group whose body waits does not hold back the next', async () => {
    const store = await PostgresStore.open(await database(), { schema: 'parallel_groups', parallelGroups: 4 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const waiting = store.transact(async (tx) => {
      await tx.put('k', 'waiting', { n: 1 }, { expectedVersion: null });
      entered();
      await held;
    });
    await inside;
    await store.transact((tx) => tx.put('k', 'free', { n: 2 }, { expectedVersion: null }));
    expect(await store.read((r) => r.get('k', 'waiting'))).toBeUndefined();
    expect((await store.read((r) => r.get('k', 'free')))?.data).toEqual({ n: 2 });
    release();
    await waiting;
    expect((await store.read((r) => r.get('k', 'waiting')))?.data).toEqual({ n: 1 });
    await store.close();
  });

  test('parallelGroups that is not a positive integer is refused before anything connects', async () => {
    await expect(PostgresStore.open(await database(), { parallelGroups: 0 })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
  });
});

/** Runs `body` on a plain connection to `url`, for looking at (or planting) what a store finds there. */
async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/** Every relation in `schema` with its kind, and every row of its store_schema table when it has one. */
async function schemaState(url: string, schema: string) {
  return withClient(url, async (client) => {
    const relations = (
      await client.query(
        'SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ' +
          'WHERE n.nspname = $1 ORDER BY c.relname',
        [schema],
      )
    ).rows;
    const hasVersionTable = relations.some((r) => r.relname === 'store_schema');
    const versions = hasVersionTable ? (await client.query(`SELECT * FROM "${schema}".store_schema`)).rows : [];
    return { relations, versions };
  });
}

describePostgres('PostgreSQL store schema', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'schema');
  });

  test('a new store creates its schema with a version table naming its format and version', async () => {
    const store = await PostgresStore.open(url, { schema: 'fresh' });
    await store.close();
    const { relations, versions } = await schemaState(url, 'fresh');
    expect(relations.map((r) => r.relname)).toEqual(
      expect.arrayContaining(['feed_clock', 'log', 'one_run_per_fence', 'records', 'store_schema']),
    );
    expect(versions).toMatchObject([{ format: STORE_FORMAT, version: SCHEMA_VERSION }]);
  });

  test('a store of an older schema version is migrated by the store itself, its data kept', async () => {
    await withClient(url, async (client) => {
      await client.query('CREATE SCHEMA old');
      await client.query(MIGRATIONS[0]!.sql('"old"'));
      await client.query('INSERT INTO old.store_schema (format, version) VALUES ($1, 1)', [STORE_FORMAT]);
      await client.query(
        `INSERT INTO old.records (kind, id, version, terminal, data) VALUES ('definition', 'a', 3, false, '{"n":1}')`,
      );
    });
    const store = await PostgresStore.open(url, { schema: 'old' });
    try {
      expect(await store.read((r) => r.get('definition', 'a'))).toMatchObject({ version: 3, data: { n: 1 } });
      // The migration's index is there: the database refuses a second run for one fence.
      const run = { snapshot: { context: { occurrenceId: 'o', fenceGeneration: 1 } } };
      await store.transact((tx) => tx.put('run', 'r1', run, { expectedVersion: null }));
      await expect(store.transact((tx) => tx.put('run', 'r2', run, { expectedVersion: null }))).rejects.toBeInstanceOf(
        StoreConflictError,
      );
    } finally {
      await store.close();
    }
    expect((await schemaState(url, 'old')).versions).toMatchObject([{ version: SCHEMA_VERSION }]);
  });

  test('a foreign schema is refused with a typed error and left exactly as it was', async () => {
    await withClient(url, async (client) => {
      await client.query('CREATE SCHEMA foreign_app');
      await client.query('CREATE TABLE foreign_app.records (id int PRIMARY KEY, note text)');
      await client.query(`INSERT INTO foreign_app.records VALUES (1, 'theirs')`);
      await client.query('CREATE SCHEMA other_format');
      await client.query(
        'CREATE TABLE other_format.store_schema (singleton boolean PRIMARY KEY, format text, version int)',
      );
      await client.query(`INSERT INTO other_format.store_schema VALUES (true, 'somebody-else', 1)`);
    });
    for (const schema of ['foreign_app', 'other_format']) {
      const before = await schemaState(url, schema);
      const refusal = await PostgresStore.open(url, { schema }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(PostgresSchemaError);
      expect(refusal).toMatchObject({ code: 'INTERNAL', httpStatus: 500 });
      expect((refusal as Error).message).toContain('left untouched');
      expect(await schemaState(url, schema)).toEqual(before);
    }
    const rows = await withClient(
      url,
      async (client) => (await client.query('SELECT * FROM foreign_app.records')).rows,
    );
    expect(rows).toEqual([{ id: 1, note: 'theirs' }]);
  });

  test('a store of a newer schema version is refused untouched', async () => {
    const store = await PostgresStore.open(url, { schema: 'newer' });
    await store.close();
    await withClient(url, (client) => client.query('UPDATE newer.store_schema SET version = $1', [SCHEMA_VERSION + 1]));
    const before = await schemaState(url, 'newer');
    await expect(PostgresStore.open(url, { schema: 'newer' })).rejects.toMatchObject({
      name: 'PostgresSchemaError',
      message: expect.stringContaining(`schema version ${SCHEMA_VERSION + 1} is not supported`),
    });
    expect(await schemaState(url, 'newer')).toEqual(before);
  });

  test('engines opening one new store at once create its schema once, and all of them use it', async () => {
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(url, { schema: 'racing' })));
    try {
      // Appends racing on one stream from different stores: the losers are refused whole and try again.
      await Promise.all(stores.map((s, i) => untilCommitted(() => s.transact((tx) => tx.append('shared', { i })))));
      const entries = await stores[0]!.read((r) => r.readLog('shared'));
      expect(entries.map((e) => e.sequence)).toEqual([0, 1, 2, 3]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    expect((await schemaState(url, 'racing')).versions).toHaveLength(1);
  });

  test('an unreachable database and a bad schema name are typed errors, not crashes', async () => {
    const nowhere = `postgresql://postgres@/x?host=${encodeURIComponent(join(socketDir, 'no-such-folder'))}`;
    await expect(PostgresStore.open(nowhere)).rejects.toMatchObject({ name: 'StoreUnavailableError', retryable: true });
    await expect(PostgresStore.open(url, { schema: 'Robert"); DROP' })).rejects.toBeInstanceOf(PostgresSchemaError);
    await expect(openStore(url as PostgresUrl, 'sqlite' as never)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    // Trust authentication ignores the password; the store must still never repeat it.
    const withPassword = url.replace('postgresql://postgres@', 'postgresql://postgres:secret@') as PostgresUrl;
    const viaOpenStore = await openStore(withPassword);
    expect(viaOpenStore).toBeInstanceOf(PostgresStore);
    expect(viaOpenStore.file).toContain('postgres:***@');
    expect(viaOpenStore.file).not.toContain('secret');
    await viaOpenStore.close();
  });
});
