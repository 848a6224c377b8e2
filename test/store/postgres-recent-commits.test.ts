import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import fc from 'fast-check';
import { propertyParameters } from '../support/property.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { StoreTransaction } from '../../src/store/store.js';
import { describePostgres, freshDatabase, sentMessages } from '../support/postgres.js';

/** The reads a launch's answer names: a record the adoption wrote, a hold that is usually absent, a stream. */
const RELYING = {
  keys: [
    ['run', 'r1'],
    ['run-hold', 'r1'],
  ] as Array<[string, string]>,
  streams: ['run/r1'],
  options: { appending: true, recentCommits: { absentUnlessRemembered: [['run-hold', 'r1'] as const] } },
};

/** The adoption: creates the run and the first entry of its stream, alone in its group. */
const adopt = (tx: StoreTransaction) =>
  Promise.all([
    tx.put('run', 'r1', { step: 1 }, { expectedVersion: null }),
    tx.append('run/r1', { event: 'adopted' }, 0),
  ]);

/** The answer: reads what the adoption wrote and moves it on; counts its runs. */
function answer(runs: { count: number }) {
  return async (tx: StoreTransaction) => {
    runs.count++;
    await tx.prefetch!(RELYING.keys, RELYING.streams, RELYING.options);
    const run = await tx.get<{ step: number }>('run', 'r1');
    const hold = await tx.get('run-hold', 'r1');
    await tx.put('run', 'r1', { step: run!.data.step + 1 }, { expectedVersion: run!.version });
    const appended = await tx.append('run/r1', { event: 'answered', held: hold !== undefined });
    return { step: run!.data.step + 1, held: hold !== undefined, appended };
  };
}

describePostgres("a launch's answer reads what its store just committed, and checks it as it commits", (socketDir) => {
  let url: string;
  let cases = 0;
  const open: PostgresStore[] = [];
  const openStore = async (schema: string) => {
    const store = await PostgresStore.open(url, { schema });
    open.push(store);
    return store;
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'recent_commits');
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const store of open.splice(0)) await store.close();
  });

  test('alone after its adoption, it sends one message: the checked writes with COMMIT', async () => {
    const store = await openStore('recent_alone');
    await store.transact(adopt);
    const sent = sentMessages();
    const runs = { count: 0 };
    const result = await store.transact(answer(runs));
    expect(sent.texts()).toHaveLength(1);
    expect(sent.texts()[0]).toMatch(/^BEGIN ISOLATION LEVEL REPEATABLE READ;.*EXECUTE .*; COMMIT$/s);
    expect(runs.count).toBe(1);
    expect(result).toMatchObject({ step: 2, held: false });
    // Its append's position is taken as it commits.
    expect(result.appended.sequence).toBe(1);
    expect(Number.isNaN(result.appended.position)).toBe(true);
    const feed = await store.read((r) => r.readLog<{ event: string }>('run/r1'));
    expect(feed.map((e) => [e.sequence, e.data.event])).toEqual([
      [0, 'adopted'],
      [1, 'answered'],
    ]);
    expect(feed[1]!.position).toBeGreaterThan(feed[0]!.position);
    expect(await store.read((r) => r.get('run', 'r1'))).toMatchObject({ version: 2, data: { step: 2 } });
  });

  test.each([
    ['another store moved a record it relied on', (tx: StoreTransaction) => bump(tx)],
    [
      'another store appended to a stream it relied on',
      async (tx: StoreTransaction) => void (await tx.append('run/r1', { event: 'x' })),
    ],
    [
      'another store wrote a record it took as absent',
      (tx: StoreTransaction) => tx.put('run-hold', 'r1', { by: 'operator' }, { expectedVersion: null }),
    ],
    ['another store deleted the record and wrote it again at the same version', (tx: StoreTransaction) => redo(tx)],
  ] as Array<[string, (tx: StoreTransaction) => Promise<unknown>]>)(
    '%s: nothing of the first run commits, the body runs again on what the database holds',
    async (_, change) => {
      const schema = `recent_stale_${++cases}`;
      const store = await openStore(schema);
      const other = await openStore(schema);
      await store.transact(adopt);
      await other.transact(change);
      const runs = { count: 0 };
      const result = await store.transact(answer(runs));
      expect(runs.count).toBe(2);
      const run = await store.read((r) => r.get<{ step: number }>('run', 'r1'));
      expect(result.step).toBe(run!.data.step);
      const feed = await store.read((r) => r.readLog<{ event: string; held?: boolean }>('run/r1'));
      // Gapless, in order, the answer once and after whatever the other store appended.
      expect(feed.map((e) => e.sequence)).toEqual(feed.map((_, i) => i));
      expect(feed.filter((e) => e.data.event === 'answered')).toHaveLength(1);
      expect(feed.at(-1)!.data).toEqual({ event: 'answered', held: result.held });
      expect(feed.map((e) => e.position)).toEqual([...feed.map((e) => e.position)].sort((a, b) => a - b));
    },
  );

  test('whatever another store commits between adoption and answer, the answer commits once, on what it reads', async () => {
    const changes = { bump, redo, hold, append: appendOther, unrelated } as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...(Object.keys(changes) as Array<keyof typeof changes>)), { maxLength: 3 }),
        fc.boolean(),
        async (between, midStepRead) => {
          const schema = `recent_prop_${++cases}`;
          const store = await openStore(schema);
          const other = await openStore(schema);
          await store.transact(adopt);
          for (const change of between) await other.transact(changes[change]);
          const runs = { count: 0 };
          const result = await store.transact(async (tx) => {
            const answered = await answer(runs)(tx);
            if (midStepRead) await tx.list('run-hold');
            return answered;
          });
          const relied = between.some((change) => change !== 'unrelated');
          expect(runs.count).toBe(relied ? 2 : 1);
          const run = await store.read((r) => r.get<{ step: number }>('run', 'r1'));
          expect(result.step).toBe(run!.data.step);
          expect(result.held).toBe(between.includes('hold'));
          const feed = await store.read((r) => r.readLog<{ event: string }>('run/r1'));
          expect(feed.map((e) => e.sequence)).toEqual(feed.map((_, i) => i));
          expect(feed.filter((e) => e.data.event === 'answered')).toHaveLength(1);
          expect(feed.at(-1)!.data.event).toBe('answered');
          const positions = feed.map((e) => e.position);
          expect(positions).toEqual([...positions].sort((a, b) => a - b));
          for (const opened of open.splice(0)) await opened.close();
        },
      ),
      propertyParameters("an answer relying on its store's memory against another store's commits", 20),
    );
  }, 120_000);

  test('a second prefetch from memory in the same step keeps what the first relied on checked', async () => {
    const store = await openStore('recent_twice');
    const other = await openStore('recent_twice');
    await store.transact(adopt);
    await other.transact(hold);
    const runs = { count: 0 };
    const result = await store.transact(async (tx) => {
      await tx.prefetch!(RELYING.keys, RELYING.streams, RELYING.options);
      return answer(runs)(tx);
    });
    // The hold the first prefetch took as absent was written meanwhile: the body ran again and saw it.
    expect(runs.count).toBe(2);
    expect(result.held).toBe(true);
  });

  test('a step that needs the database after all reads what it relied on first and goes on once', async () => {
    const store = await openStore('recent_reads');
    await store.transact(adopt);
    const runs = { count: 0 };
    const seen = await store.transact(async (tx) => {
      const answered = await answer(runs)(tx);
      // A list goes to the database: the step's staged writes are sent, with positions, within its transaction.
      const runsListed = await tx.list('run');
      const feed = await tx.readFeed();
      return { answered, listed: runsListed.length, positions: feed.map((e) => e.position) };
    });
    expect(runs.count).toBe(1);
    expect(seen.listed).toBe(1);
    expect(seen.positions).toHaveLength(2);
    expect(seen.positions.every(Number.isFinite)).toBe(true);
    expect(await store.read((r) => r.get('run', 'r1'))).toMatchObject({ version: 2 });
  });

  test('nothing is remembered of a group of several jobs: the answer after one reads the database', async () => {
    const store = await openStore('recent_groups');
    // A group held open while two more jobs queue: they are written together, the adoption under a savepoint.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = store.transact(async (tx) => {
      await tx.put('definition', 'd', { n: 1 }, { expectedVersion: null });
      await held;
    });
    const grouped = [
      store.transact(adopt),
      store.transact((tx) => tx.put('definition', 'e', {}, { expectedVersion: null })),
    ];
    release();
    await first;
    await Promise.all(grouped);
    const sent = sentMessages();
    const runs = { count: 0 };
    await store.transact(answer(runs));
    expect(runs.count).toBe(1);
    // Its prefetch went to the database, then its writes: two messages.
    expect(sent.texts()).toHaveLength(2);
  });
});

/** Moves run r1 on by one version, from another store. */
async function bump(tx: StoreTransaction): Promise<void> {
  const run = await tx.get<{ step: number }>('run', 'r1');
  await tx.put('run', 'r1', { step: run!.data.step + 10 }, { expectedVersion: run!.version });
}

/** Deletes run r1 and writes it again, at the version it had: the same version, another row. */
async function redo(tx: StoreTransaction): Promise<void> {
  const run = await tx.get<{ step: number }>('run', 'r1');
  await tx.delete('run', 'r1', run!.version);
  let version = 0;
  while (version < run!.version) {
    const expectedVersion = version === 0 ? null : version;
    version = (await tx.put('run', 'r1', { step: run!.data.step + 5 }, { expectedVersion })).version;
  }
}

/** Places a hold on run r1 (once), from another store. */
async function hold(tx: StoreTransaction): Promise<void> {
  if ((await tx.get('run-hold', 'r1')) === undefined)
    await tx.put('run-hold', 'r1', { by: 'operator' }, { expectedVersion: null });
}

/** Appends to run r1's stream, from another store. */
async function appendOther(tx: StoreTransaction): Promise<void> {
  await tx.append('run/r1', { event: 'other' });
}

/** Writes a record the answer never reads. */
async function unrelated(tx: StoreTransaction): Promise<void> {
  const current = await tx.get('definition', 'elsewhere');
  await tx.put('definition', 'elsewhere', { at: Date.now() }, { expectedVersion: current?.version ?? null });
}
