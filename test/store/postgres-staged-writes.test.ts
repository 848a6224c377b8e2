import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { Connection } from '../../src/store/postgres/connection.js';
import { StoreConflictError, type Store, type StoreTransaction } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** The statements a store sends while `body` runs, by their first words (a job's last writes carry its COMMIT). */
async function statementsDuring(body: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const firstWords = (text: string) => sent.push(text.split(' ').slice(0, 3).join(' '));
  // A statement that carries the transaction's BEGIN goes through rowsOpening, which otherwise calls run.
  let carrying = 0;
  const rowsOpening = Connection.prototype.rowsOpening;
  const spyOpening = vi.spyOn(Connection.prototype, 'rowsOpening').mockImplementation(async function (
    this: Connection,
    text,
    values,
  ) {
    firstWords(text);
    carrying++;
    try {
      return await rowsOpening.call(this, text, values);
    } finally {
      carrying--;
    }
  });
  const run = Connection.prototype.run;
  const spy = vi.spyOn(Connection.prototype, 'run').mockImplementation(function (this: Connection, text, values) {
    if (carrying === 0) firstWords(text);
    return run.call(this, text, values);
  });
  const committing = Connection.prototype.executeThenCommit;
  const spyCommitting = vi.spyOn(Connection.prototype, 'executeThenCommit').mockImplementation(function (
    this: Connection,
    text,
    values,
  ) {
    firstWords(text);
    return committing.call(this, text, values);
  });
  try {
    await body();
  } finally {
    spy.mockRestore();
    spyOpening.mockRestore();
    spyCommitting.mockRestore();
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
    expect(sent.filter((s) => s.includes('records') || s.startsWith('WITH')).length).toBe(1);
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

  test("a job's inserts, updates and appends travel in one statement", async () => {
    const { store } = await openStore();
    await store.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    const sent = await statementsDuring(() =>
      store.transact(async (tx) => {
        await tx.put('occurrence', 'o2', { n: 1 }, { expectedVersion: null });
        await tx.put('occurrence', 'o1', { n: 2 }, { expectedVersion: 1 });
        await tx.append('occurrence/o1', { type: 'moved' });
        await tx.append('occurrence/o2', { type: 'made' });
      }),
    );
    expect(sent.filter((s) => /records|log/.test(s) || s.startsWith('WITH'))).toEqual(['WITH inserted AS']);
    const [o1, o2, heads] = await store.read(async (r) => [
      await r.get('occurrence', 'o1'),
      await r.get('occurrence', 'o2'),
      [await r.head('occurrence/o1'), await r.head('occurrence/o2')],
    ]);
    expect([o1?.version, o2?.version, heads]).toEqual([2, 1, [1, 1]]);
  });

  test('past a refused write nothing later of the job is sent, even when the body carries on', async () => {
    const { store: first, schema } = await openStore();
    const { store: second } = await openStore(schema);
    await first.transact(async (tx) => {
      await tx.put('occurrence', 'stale', { by: 'first' }, { expectedVersion: null });
      await tx.put('occurrence', 'taken', { by: 'first' }, { expectedVersion: null });
    });
    await second.transact((tx) => tx.put('occurrence', 'stale', { by: 'second' }, { expectedVersion: 1 }));
    const carriedOn = (staging: (tx: StoreTransaction) => Promise<unknown>) =>
      first.transact(async (tx) => {
        await staging(tx);
        await tx.append('occurrence/stale', { type: 'moved' });
        // A list sends the staged writes first: the refusal surfaces here and the body swallows it.
        await expect(tx.list('occurrence')).rejects.toBeInstanceOf(StoreConflictError);
      });
    // A refused update: the insert before it went, the append after it did not.
    await carriedOn(async (tx) => {
      await tx.put('occurrence', 'fresh', { n: 1 }, { expectedVersion: null });
      await tx.put('occurrence', 'stale', { by: 'first again' }, { expectedVersion: 1 });
    });
    // A refused insert: neither the update nor the append after it went.
    await carriedOn(async (tx) => {
      await tx.put('occurrence', 'taken', { by: 'again' }, { expectedVersion: null });
      await tx.put('occurrence', 'fresh', { n: 2 }, { expectedVersion: 1 });
    });
    const [stale, fresh, head] = await first.read(async (r) => [
      await r.get('occurrence', 'stale'),
      await r.get('occurrence', 'fresh'),
      await r.head('occurrence/stale'),
    ]);
    expect([stale?.data, fresh?.version, head]).toEqual([{ by: 'second' }, 1, 0]);
  });
});
