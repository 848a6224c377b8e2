import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { StoreConflictError, type StoreTransaction } from '../../src/store/store.js';
import { describePostgres, freshDatabase, sentMessages } from '../support/postgres.js';

/** {@link sentMessages}, whitespace folded. */
function messages() {
  const sent = sentMessages();
  return () => sent.texts().map((text) => text.replace(/\s+/g, ' ').trim());
}

/** Runs `jobs` in one group with a first job that holds it open until every other job has queued. */
async function oneGroup(store: PostgresStore, jobs: Array<(tx: StoreTransaction) => Promise<unknown>>) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const first = store.transact(async (tx) => {
    await tx.put('definition', 'held', { n: 1 }, { expectedVersion: null });
    await held;
  });
  // Settled as they are answered: a job refused in the group is answered before the group commits.
  const rest = Promise.allSettled(jobs.map((job) => store.transact(job)));
  release();
  await first;
  return rest;
}

describePostgres('round trips on PostgreSQL: transaction control travels with statements', (socketDir) => {
  let url: string;
  let store: PostgresStore;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'round_trips');
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await store?.close();
  });

  test("a read's BEGIN travels with its first get, and a read that asks nothing sends nothing", async () => {
    store = await PostgresStore.open(url, { schema: 'reads' });
    await store.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    const sent = messages();
    const found = await store.read(async (r) => [await r.get('occurrence', 'o1'), await r.get('occurrence', 'o2')]);
    expect(found.map((record) => record?.data)).toEqual([{ n: 1 }, undefined]);
    const texts = sent();
    // BEGIN with the first get, the second get, COMMIT.
    expect(texts).toHaveLength(3);
    expect(texts[0]).toMatch(
      /^BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; .*EXECUTE coven_\d+_x\('occurrence', 'o1'\)$/,
    );
    expect(texts[2]).toBe('COMMIT');
    vi.restoreAllMocks();
    const none = messages();
    expect(await store.read(() => 7)).toBe(7);
    expect(none()).toEqual([]);
  });

  test('a read after a failed one starts clean: the failure rolled back what it began', async () => {
    store = await PostgresStore.open(url, { schema: 'reads_failed' });
    await store.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    await expect(
      store.read(async (r) => {
        await r.get('occurrence', 'o1');
        throw new Error('the body gave up');
      }),
    ).rejects.toThrow('the body gave up');
    expect((await store.read((r) => r.get('occurrence', 'o1')))?.data).toEqual({ n: 1 });
  });

  test("between a group's jobs the savepoint is renewed with the next job's first statement, never on its own", async () => {
    store = await PostgresStore.open(url, { schema: 'renewals' });
    await store.transact((tx) => tx.put('run', 'taken', { n: 0 }, { expectedVersion: null }));
    const sent = messages();
    // Each job's first statement is a read, which carries what waits to be sent (a write is sent just after it).
    const results = await oneGroup(store, [
      async (tx) => {
        await tx.get('run', 'taken');
        await tx.put('run', 'a', { n: 1 }, { expectedVersion: null });
      },
      // Fails before sending anything: nothing to roll back, and the renewal waits for the next job.
      async () => {
        throw new Error('refused before any statement');
      },
      // Fails after its statement reached the server: rolled back to the savepoint renewed with that statement.
      async (tx) => {
        await tx.get('run', 'a');
        await tx.put('run', 'b', { n: 2 }, { expectedVersion: null });
        await tx.put('run', 'taken', { n: 1 }, { expectedVersion: null });
      },
      async (tx) => {
        const a = await tx.get<{ n: number }>('run', 'a');
        await tx.put('run', 'c', { n: a!.data.n + 2 }, { expectedVersion: null });
      },
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
    const texts = sent();
    expect(texts.filter((t) => /^RELEASE job; SAVEPOINT job;?$/.test(t))).toEqual([]);
    expect(texts.filter((t) => t.startsWith('RELEASE job; SAVEPOINT job; ')).length).toBeGreaterThan(0);
    const kept = await store.read(async (r) => ({
      a: (await r.get('run', 'a'))?.data,
      b: (await r.get('run', 'b'))?.data,
      c: (await r.get('run', 'c'))?.data,
      taken: (await r.get('run', 'taken'))?.data,
    }));
    expect(kept).toEqual({ a: { n: 1 }, b: undefined, c: { n: 3 }, taken: { n: 0 } });
  });
});
