import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { Connection } from '../../src/store/postgres/connection.js';
import { StoreConflictError, type Store } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** The statements a store sends while `body` runs, by their first words. */
async function statementsDuring(body: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const run = Connection.prototype.run;
  const spy = vi.spyOn(Connection.prototype, 'run').mockImplementation(function (this: Connection, text, values) {
    sent.push(text.split(' ').slice(0, 3).join(' '));
    return run.call(this, text, values);
  });
  try {
    await body();
  } finally {
    spy.mockRestore();
  }
  return sent;
}

describePostgres('PostgreSQL staged writes', (socketDir) => {
  let url: string;
  let schemas = 0;
  const open: Store[] = [];
  const openStore = async (schema = `staged_${schemas++}`) => {
    const store = await PostgresStore.open(url, { schema });
    open.push(store);
    return { store, schema };
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'staged');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((store) => store.close()));
  });

  test('a record moved many times in one transaction is sent once, at its last state and version', async () => {
    const { store } = await openStore();
    const sent = await statementsDuring(() =>
      store.transact(async (tx) => {
        let record = await tx.put('occurrence', 'o1', { step: 0 }, { expectedVersion: null });
        for (let step = 1; step <= 5; step++) {
          expect((await tx.get('occurrence', 'o1'))?.version).toBe(record.version);
          record = await tx.put('occurrence', 'o1', { step }, { expectedVersion: record.version });
        }
        expect(await tx.version('occurrence', 'o1')).toBe(6);
      }),
    );
    expect(sent.filter((s) => s.includes('records')).length).toBe(1);
    const stored = await store.read((r) => r.get('occurrence', 'o1'));
    expect(stored).toMatchObject({ version: 6, data: { step: 5 }, terminal: false });
  });

  test('a record read once is not read again in the transaction', async () => {
    const { store } = await openStore();
    await store.transact((tx) => tx.put('definition', 'd1', { n: 1 }, { expectedVersion: null }));
    const sent = await statementsDuring(() =>
      store.transact(async (tx) => {
        for (let i = 0; i < 4; i++) await tx.get('definition', 'd1');
        expect(await tx.get('definition', 'absent')).toBeUndefined();
        expect(await tx.get('definition', 'absent')).toBeUndefined();
      }),
    );
    expect(sent.filter((s) => s.startsWith('SELECT *')).length).toBe(2);
  });

  test('a write against a version another engine committed since is refused when sent; nothing of the job commits', async () => {
    const { store: first, schema } = await openStore();
    const { store: second } = await openStore(schema);
    await first.transact((tx) => tx.put('occurrence', 'o1', { by: 'first' }, { expectedVersion: null }));
    await second.transact((tx) => tx.put('occurrence', 'o1', { by: 'second' }, { expectedVersion: 1 }));
    const refused = first.transact(async (tx) => {
      await tx.append('occurrence/o1', { type: 'moved' });
      await tx.put('occurrence', 'o1', { by: 'first again' }, { expectedVersion: 1 });
    });
    await expect(refused).rejects.toBeInstanceOf(StoreConflictError);
    expect(await first.read((r) => r.get('occurrence', 'o1'))).toMatchObject({ version: 2, data: { by: 'second' } });
    expect(await first.read((r) => r.head('occurrence/o1'))).toBe(0);
  });
});
