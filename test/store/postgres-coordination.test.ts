import pg from 'pg';
import { afterEach, beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { eventually } from '../support/eventually.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** Ends every listening session of the database from outside, as a failover or an administrator would. */
async function cutListeners(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'coven-automata listener' " +
        'AND datname = current_database()',
    );
    return rows.length;
  } finally {
    await client.end();
  }
}

/** Waits until `condition` holds (bounded: a hang fails the test). */
const until = (condition: () => boolean) => eventually(async () => (condition() ? true : undefined));

describePostgres('engines sharing one PostgreSQL store', (socketDir) => {
  let url: string;
  const opened: PostgresStore[] = [];
  const open = async (schema: string, pollMs?: number) => {
    const store = await PostgresStore.open(url, { schema, ...(pollMs === undefined ? {} : { pollMs }) });
    opened.push(store);
    return store;
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'coordination');
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  /** Two stores on one schema, both listening, and how many commits each one's listeners heard. */
  const listeningPair = async (schema: string) => {
    const [a, b] = [await open(schema), await open(schema)];
    const heard = { a: 0, b: 0 };
    a.onCommit(() => (heard.a += 1));
    b.onCommit(() => (heard.b += 1));
    await until(() => a.listening && b.listening);
    return { a, b, heard };
  };

  test("another store's commit wakes this store's commit listeners (LISTEN/NOTIFY); its own commits wake it once", async () => {
    const { a, b, heard } = await listeningPair('notify');
    const [beforeA, beforeB] = [heard.a, heard.b];
    await b.transact((tx) => tx.put('definition', 'd1', { n: 1 }, { expectedVersion: null }));
    await until(() => heard.a > beforeA);
    // b heard its own commit directly, and not a second time through the database.
    expect(heard.b).toBe(beforeB + 1);
    // A group that only read notifies nobody.
    const quiet = heard.a;
    await b.transact((tx) => tx.get('definition', 'd1'));
    await a.transact((tx) => tx.put('definition', 'd2', { n: 2 }, { expectedVersion: null }));
    await until(() => heard.b === beforeB + 2);
    expect(heard.a).toBe(quiet + 1);
  });

  test('the listening connection announces without waiting for a WAL flush; other sessions keep synchronous commit', async () => {
    const { a, heard } = await listeningPair('async_announce');
    // The notifier's own session, as the server has it.
    const listener = (a as unknown as { notifier: { client: pg.Client } }).notifier.client;
    const show = async (client: pg.ClientBase) =>
      (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
    expect(await show(listener)).toBe('off');
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      expect(await show(other)).toBe('on');
    } finally {
      await other.end();
    }
    const before = heard.b;
    await a.transact((tx) => tx.put('definition', 'announced', { n: 1 }, { expectedVersion: null }));
    await until(() => heard.b > before);
  });

  test('a quiet commit (an owner lease renewed) is durable and wakes no listener, here or in another store', async () => {
    const { a, b, heard } = await listeningPair('quiet');
    // Each store's listener looked once when it began listening.
    const [beforeA, beforeB] = [heard.a, heard.b];
    const renew = (version: number | null) =>
      b.transact(async (tx) => {
        tx.quiet!();
        await tx.put('owner-lease', 'b', { version }, { expectedVersion: version });
      });
    await renew(null);
    expect(heard.b).toBe(beforeB);
    // b's next commit is heard by a after anything b sent before it: a heard nothing of the renewal.
    await b.transact((tx) => tx.put('definition', 'd1', { n: 1 }, { expectedVersion: null }));
    await until(() => heard.a === beforeA + 1);
    expect(heard.b).toBe(beforeB + 1);
    // Grouped with a job that is not quiet, or not, the other job's commit wakes as usual.
    await Promise.all([renew(1), b.transact((tx) => tx.put('definition', 'd2', { n: 2 }, { expectedVersion: null }))]);
    await until(() => heard.a === beforeA + 2);
    expect(heard.b).toBe(beforeB + 2);
    expect(await a.read((r) => r.version('owner-lease', 'b'))).toBe(2);
  });

  test("another store's routine commit is heard as routine, any other not; announcements folded with one are not", async () => {
    const [a, b] = [await open('routine_notify'), await open('routine_notify')];
    const heardByA: Array<[string, boolean]> = [];
    const heardByB: string[] = [];
    a.onCommit((source, routine) => heardByA.push([source ?? 'local', routine === true]));
    b.onCommit((source) => heardByB.push(source ?? 'local'));
    await until(() => a.listening && b.listening);
    heardByA.length = heardByB.length = 0;
    const put = (id: string, routine: boolean) =>
      b.transact((tx) => {
        if (routine) tx.routine?.();
        return tx.put('definition', id, { id }, { expectedVersion: null });
      });
    await put('routine', true);
    await until(() => heardByA.length > 0);
    expect(heardByA).toEqual([['outside', true]]);
    // b's own routine announcement is not taken for another store's.
    expect(heardByB).toEqual(['local']);
    heardByA.length = 0;
    await put('plain', false);
    await until(() => heardByA.length > 0);
    expect(heardByA).toEqual([['outside', false]]);
    // Commits made while an announcement is on the wire are folded into the next: one plain commit among many
    // routine ones is still heard as not routine, after every one of them committed.
    heardByA.length = 0;
    const ids = Array.from({ length: 21 }, (_, i) => i);
    await Promise.all(ids.map((i) => put(`burst-${i}`, i !== 10)));
    await until(() => heardByA.some(([, routine]) => !routine));
  });

  test('with the listening connection cut, commits are still heard (polled) and listening resumes', async () => {
    const [a, b] = [await open('poll', 50), await open('poll', 50)];
    let heard = 0;
    a.onCommit(() => (heard += 1));
    await until(() => a.listening);
    expect(await cutListeners(url)).toBeGreaterThan(0);
    await until(() => !a.listening);
    const before = heard;
    await b.transact((tx) => tx.append('automation/x', { kind: 'x' }));
    await until(() => heard > before);
    await until(() => a.listening);
  });

  test('a record another writer holds is skipped, not waited for; a free or absent one is locked', async () => {
    const [a, b] = [await open('skip'), await open('skip')];
    await a.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const locked = new Promise<void>((resolve) => (holding = resolve));
    const holder = a.transact(async (tx) => {
      expect(await tx.lockUnlessBusy!('occurrence', 'o1')).toBe(true);
      holding();
      await held;
    });
    await locked;
    const started = performance.now();
    const seen = await b.transact(async (tx) => ({
      busy: await tx.lockUnlessBusy!('occurrence', 'o1'),
      absent: await tx.lockUnlessBusy!('occurrence', 'nope'),
    }));
    expect(seen).toEqual({ busy: false, absent: true });
    // It did not queue behind the holder, which is still open.
    expect(performance.now() - started).toBeLessThan(5_000);
    release();
    await holder;
    expect(await b.transact((tx) => tx.lockUnlessBusy!('occurrence', 'o1'))).toBe(true);
  });
});
