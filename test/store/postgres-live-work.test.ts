import pg from 'pg';
import { afterEach, beforeAll, expect, test } from 'vitest';
import { OCCURRENCE_LIVE } from '../../src/domain/records.js';
import { PostgresSchemaError, PostgresStore } from '../../src/store/postgres/index.js';
import { LIVE_WORK_INDEX, LIVE_WORK_STATES } from '../../src/store/postgres/live-work-index.js';
import { MIGRATIONS, SCHEMA_VERSION, STORE_FORMAT } from '../../src/store/postgres/postgres-schema.js';
import { StoreConflictError } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** The parts of an occurrence record the database's rule reads: its state and its automation. */
const occurrence = (automationId: string, state: string) => ({ snapshot: { value: state, context: { automationId } } });

test('the index covers exactly the states the engine counts as live work', () => {
  expect([...LIVE_WORK_STATES].sort()).toEqual([...OCCURRENCE_LIVE].sort());
});

describePostgres('PostgreSQL store: one live occurrence per automation, kept by the database', (socketDir) => {
  let url: string;
  const opened: PostgresStore[] = [];
  const open = async (schema: string) => {
    const store = await PostgresStore.open(url, { schema });
    opened.push(store);
    return store;
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'live_work');
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  test('a second occurrence of one automation entering a live state is refused as a lost race, nothing written', async () => {
    const [a, b] = [await open('refuse'), await open('refuse')];
    await a.transact(async (tx) => {
      await tx.put('occurrence', 'o1', occurrence('nightly', 'claimed'), { expectedVersion: null });
      await tx.put('occurrence', 'o2', occurrence('nightly', 'eligible'), { expectedVersion: null });
      await tx.put('occurrence', 'x1', occurrence('hourly', 'running'), { expectedVersion: null });
    });
    // Another engine's claim, written without looking at o1 (as a write skew would): the database refuses it.
    const refused = await b
      .transact((tx) => tx.put('occurrence', 'o2', occurrence('nightly', 'claimed'), { expectedVersion: 1 }))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreConflictError);
    expect((refused as StoreConflictError).code).toBe('REVISION_CONFLICT');
    expect((refused as StoreConflictError).details).toMatchObject({ sqlState: '23505', constraint: LIVE_WORK_INDEX });
    expect((await b.read((r) => r.get('occurrence', 'o2')))?.data).toEqual(occurrence('nightly', 'eligible'));
    // A live occurrence inserted whole is refused the same way.
    await expect(
      b.transact((tx) => tx.put('occurrence', 'o3', occurrence('nightly', 'running'), { expectedVersion: null })),
    ).rejects.toBeInstanceOf(StoreConflictError);
    // The live one moves between live states; once it is settled, the next may claim.
    await a.transact((tx) => tx.put('occurrence', 'o1', occurrence('nightly', 'running'), { expectedVersion: 1 }));
    await a.transact((tx) => tx.put('occurrence', 'o1', occurrence('nightly', 'succeeded'), { expectedVersion: 2 }));
    await b.transact((tx) => tx.put('occurrence', 'o2', occurrence('nightly', 'claimed'), { expectedVersion: 1 }));
  });

  test('two claims in flight at once: the second waits for the first and is refused when it commits', async () => {
    const [a, b] = [await open('inflight'), await open('inflight')];
    await a.transact(async (tx) => {
      await tx.put('occurrence', 'p1', occurrence('nightly', 'planned'), { expectedVersion: null });
      await tx.put('occurrence', 'p2', occurrence('nightly', 'planned'), { expectedVersion: null });
    });
    let commitFirst!: () => void;
    const held = new Promise<void>((resolve) => (commitFirst = resolve));
    let claimed!: () => void;
    const firstClaimed = new Promise<void>((resolve) => (claimed = resolve));
    const first = a.transact(async (tx) => {
      await tx.put('occurrence', 'p1', occurrence('nightly', 'claimed'), { expectedVersion: 1 });
      // A read through SQL sends the staged claim: the first's row is in the index before the second is sent.
      await tx.liveWork('occurrence');
      claimed();
      await held;
    });
    await firstClaimed;
    const second = b
      .transact((tx) => tx.put('occurrence', 'p2', occurrence('nightly', 'claimed'), { expectedVersion: 1 }))
      .catch((error: unknown) => error);
    commitFirst();
    await first;
    expect(await second).toBeInstanceOf(StoreConflictError);
    expect((await b.read((r) => r.get('occurrence', 'p2')))?.data).toEqual(occurrence('nightly', 'planned'));
  });

  test('a store holding two live occurrences of one automation is refused at migration, untouched', async () => {
    const schema = 'legacy';
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const version = async () =>
      (await client.query<{ version: number }>(`SELECT version FROM ${schema}.store_schema`)).rows[0]!.version;
    try {
      // A version 2 store, as an engine before this rule left it.
      await client.query(`CREATE SCHEMA ${schema}`);
      for (const migration of MIGRATIONS.filter((m) => m.version <= 2)) await client.query(migration.sql(schema));
      await client.query(`INSERT INTO ${schema}.store_schema (format, version) VALUES ($1, 2)`, [STORE_FORMAT]);
      const insert = (id: string, state: string) =>
        client.query(`INSERT INTO ${schema}.records VALUES ('occurrence', $1, 1, false, $2)`, [
          id,
          JSON.stringify(occurrence('nightly', state)),
        ]);
      await insert('o1', 'running');
      await insert('o2', 'claimed');
      const refused = await PostgresStore.open(url, { schema }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(PostgresSchemaError);
      expect((refused as Error).message).toContain('nightly (o1, o2)');
      expect(await version()).toBe(2);
      // Settled by the version that wrote them, the store migrates.
      await client.query(`UPDATE ${schema}.records SET data = $1 WHERE id = 'o2'`, [
        JSON.stringify(occurrence('nightly', 'failed')),
      ]);
      opened.push(await PostgresStore.open(url, { schema }));
      expect(await version()).toBe(SCHEMA_VERSION);
    } finally {
      await client.end();
    }
  });
});
