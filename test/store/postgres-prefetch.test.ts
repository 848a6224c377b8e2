import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import { Connection } from '../../src/store/postgres/connection.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

describePostgres('prefetch on PostgreSQL: many records and stream heads in one statement', (socketDir) => {
  let url: string;
  let store: PostgresStore;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'prefetch');
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await store?.close();
  });

  test('gets and heads then answer what they would have read, with no further round trip', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch' });
    await store.transact(async (tx) => {
      await tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null });
      await tx.put('run', 'r1', { n: 1 }, { expectedVersion: null, terminal: true });
      for (let i = 0; i < 3; i++) await tx.append('run/r1', { i });
    });
    const statements = vi.spyOn(Connection.prototype, 'run');
    const seen = await store.transact(async (tx) => {
      // Written in this transaction before the prefetch: what it staged wins over the stored row.
      await tx.put('occurrence', 'o1', { n: 2 }, { expectedVersion: 1 });
      const before = statements.mock.calls.length;
      await tx.prefetch!(
        [
          ['occurrence', 'o1'],
          ['run', 'r1'],
          ['run', 'missing'],
        ],
        ['run/r1', 'run/new'],
      );
      const prefetched = statements.mock.calls.length - before;
      const answers = {
        o1: (await tx.get<{ n: number }>('occurrence', 'o1'))?.data.n,
        r1: await tx.get('run', 'r1'),
        missing: await tx.get('run', 'missing'),
        headR1: await tx.head('run/r1'),
        headNew: await tx.head('run/new'),
      };
      const after = statements.mock.calls.length - before - prefetched;
      const appended = await tx.append('run/r1', { i: 3 });
      return { prefetched, after, answers, appended: appended.sequence };
    });
    expect(seen.prefetched).toBe(1);
    expect(seen.after).toBe(0);
    expect(seen.answers).toEqual({
      o1: 2,
      r1: { kind: 'run', id: 'r1', version: 1, terminal: true, data: { n: 1 } },
      missing: undefined,
      headR1: 3,
      headNew: 0,
    });
    expect(seen.appended).toBe(3);
    // Nothing the prefetch read was written: the staged put and the append are what committed.
    await store.read(async (r) => {
      expect((await r.get<{ n: number }>('occurrence', 'o1'))?.data.n).toBe(2);
      expect(await r.head('run/r1')).toBe(4);
      expect(await r.get('run', 'missing')).toBeUndefined();
    });
  });

  test('keys already known to the transaction are not asked again; nothing new to ask sends nothing', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_known' });
    await store.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    const statements = vi.spyOn(Connection.prototype, 'run');
    const sent = await store.transact(async (tx) => {
      await tx.get('occurrence', 'o1');
      await tx.head('run/r1');
      const before = statements.mock.calls.length;
      await tx.prefetch!([['occurrence', 'o1']], ['run/r1']);
      return statements.mock.calls.length - before;
    });
    expect(sent).toBe(0);
  });

  test('an appending prefetch fetches the feed numbering with the reads: the appends after it ask nothing', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_appending' });
    await store.transact((tx) => tx.append('automation/a0', { n: 0 }, 0));
    const statements = vi.spyOn(Connection.prototype, 'run');
    const { sent, positions } = await store.transact(async (tx) => {
      const before = statements.mock.calls.length;
      await tx.prefetch!([['occurrence', 'o1']], [], { appending: true });
      const appended = [];
      for (let n = 0; n < 3; n++) appended.push(await tx.append('occurrence/o1', { n }, n));
      return { sent: statements.mock.calls.length - before, positions: appended.map((a) => a.position) };
    });
    expect(sent).toBe(1);
    const later = await store.transact(async (tx) => (await tx.append('automation/a0', { n: 1 }, 1)).position);
    const feed = await store.read((r) => r.readFeed());
    expect(feed.map((e) => e.position)).toEqual([feed[0]!.position, ...positions, later]);
    expect(positions[1]! - positions[0]!).toBe(1);
    expect(positions[2]! - positions[1]!).toBe(1);
    expect(feed.map((e) => e.stream)).toEqual(['automation/a0', ...Array(3).fill('occurrence/o1'), 'automation/a0']);
  });

  test('getMany answers the records among the ids that exist, in one statement, with what the transaction wrote', async () => {
    store = await PostgresStore.open(url, { schema: 'get_many' });
    await store.transact(async (tx) => {
      for (const id of ['c1', 'c2', 'c3']) await tx.put('plan-cursor', id, { id }, { expectedVersion: null });
    });
    const ids = ['c3', 'missing', 'c1', 'c2'];
    const statements = vi.spyOn(Connection.prototype, 'run');
    const outside = await store.read(async (r) =>
      (await r.getMany!<{ id: string }>('plan-cursor', ids)).map((x) => x.id),
    );
    expect(outside).toEqual(['c1', 'c2', 'c3']);
    expect(statements.mock.calls.filter(([sql]) => sql.includes('ANY($2::text[])'))).toHaveLength(1);
    const inside = await store.transact(async (tx) => {
      await tx.put('plan-cursor', 'c2', { id: 'moved' }, { expectedVersion: 1 });
      await tx.delete('plan-cursor', 'c3', 1);
      const first = await tx.getMany!<{ id: string }>('plan-cursor', ['c1', 'c2', 'c3', 'missing']);
      const before = statements.mock.calls.length;
      const again = await tx.getMany!<{ id: string }>('plan-cursor', ['c1', 'missing']);
      return {
        first: first.map((x) => [x.id, x.version, x.data.id]),
        again: again.length,
        sent: statements.mock.calls.length - before,
      };
    });
    expect(inside).toEqual({
      first: [
        ['c1', 1, 'c1'],
        ['c2', 2, 'moved'],
      ],
      again: 1,
      sent: 0,
    });
  });
});
