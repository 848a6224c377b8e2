import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { Connection } from '../../src/store/postgres/connection.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { propertyParameters } from '../support/property.js';

/** Every message a store sends the server (a statement, or several in one simple query), as node-postgres sends it. */
const roundTrips = () => vi.spyOn(pg.Client.prototype, 'query');
/** How many of `spy`'s calls from `from` on are a step's own: a statement's one-time PREPARE on a connection is not. */
const stepRoundTrips = (spy: ReturnType<typeof roundTrips>, from = 0) =>
  spy.mock.calls.slice(from).filter(([query]) => !queryText(query).startsWith('PREPARE')).length;
/** The SQL of a call to `Client.query`: a string, or a config's text. */
const queryText = (query: unknown): string => (typeof query === 'string' ? query : (query as pg.QueryConfig).text);

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
    const statements = roundTrips();
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
      const prefetched = stepRoundTrips(statements, before);
      const answers = {
        o1: (await tx.get<{ n: number }>('occurrence', 'o1'))?.data.n,
        r1: await tx.get('run', 'r1'),
        missing: await tx.get('run', 'missing'),
        headR1: await tx.head('run/r1'),
        headNew: await tx.head('run/new'),
      };
      const after = stepRoundTrips(statements, before) - prefetched;
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
    const statements = roundTrips();
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
    const statements = roundTrips();
    const { sent, positions } = await store.transact(async (tx) => {
      const before = statements.mock.calls.length;
      await tx.prefetch!([['occurrence', 'o1']], [], { appending: true });
      const appended = [];
      for (let n = 0; n < 3; n++) appended.push(await tx.append('occurrence/o1', { n }, n));
      return { sent: stepRoundTrips(statements, before), positions: appended.map((a) => a.position) };
    });
    expect(sent).toBe(1);
    const later = await store.transact(async (tx) => (await tx.append('automation/a0', { n: 1 }, 1)).position);
    const feed = await store.read((r) => r.readFeed());
    expect(feed.map((e) => e.position)).toEqual([feed[0]!.position, ...positions, later]);
    expect(positions[1]! - positions[0]!).toBe(1);
    expect(positions[2]! - positions[1]!).toBe(1);
    expect(feed.map((e) => e.stream)).toEqual(['automation/a0', ...Array(3).fill('occurrence/o1'), 'automation/a0']);
  });

  test("a group's BEGIN travels with its first prefetch; a group that asks nothing sends nothing", async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_begin' });
    await store.transact((tx) => tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null }));
    const sent = roundTrips();
    const seen = await store.transact(async (tx) => {
      await tx.prefetch!([['occurrence', 'o1']], ['occurrence/o1'], { appending: true });
      const record = await tx.get<{ n: number }>('occurrence', 'o1');
      await tx.put('occurrence', 'o1', { n: record!.data.n + 1 }, { expectedVersion: record!.version });
      await tx.append('occurrence/o1', { n: 2 });
      return record!.data.n;
    });
    const texts = sent.mock.calls.map(([query]) => queryText(query));
    expect(seen).toBe(1);
    const statements = texts
      // Once per connection, the prefetch and the write are prepared for EXECUTE on their own (PREPARE).
      .filter((t) => !t.includes('pg_notify') && !t.startsWith('PREPARE'))
      .map((t) => t.replace(/\s+/g, ' ').trim());
    // Two round trips: BEGIN with the prefetch, then the job's one write with the COMMIT.
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(
      /^BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL plan_cache_mode = force_generic_plan; EXECUTE /,
    );
    expect(statements[1]).toMatch(/^EXECUTE coven_\d+_x\(.*\); COMMIT$/);
    const prepared = texts.filter((t) => t.startsWith('PREPARE')).map((t) => t.replace(/\s+/g, ' '));
    expect(prepared.length).toBeLessThanOrEqual(2);
    expect(prepared.some((t) => t.includes('WITH inserted AS'))).toBe(prepared.length === 2);
    sent.mockClear();
    expect(await store.transact(() => 42)).toBe(42);
    expect(sent).not.toHaveBeenCalled();
    expect(await store.read((r) => r.head('occurrence/o1'))).toBe(1);
  });

  test('a prefetch sent with its BEGIN, its values written in as literals, reads what gets would, for any id', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_literals' });
    // Quotes, backslashes (the driver then writes an E-prefixed literal), braces, commas, the schema placeholder.
    const id = fc.stringMatching(/^[\s\S]{1,12}$/).map((text) => text.replaceAll('\u0000', ''));
    const hostile = fc.oneof(id, fc.constantFrom("it's", 'back\\slash', "\\'", '{a,b}', '"q"', 'NULL', 'é💥', '{s}'));
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          hostile.filter((text) => text !== ''),
          { minLength: 1, maxLength: 6 },
        ),
        async (ids) => {
          const stream = `round/${round++}`;
          const written = ids.filter((_, i) => i % 2 === 0);
          await store.transact(async (tx) => {
            for (const key of written) {
              const current = await tx.version('occurrence', key);
              await tx.put('occurrence', key, { key, round }, { expectedVersion: current ?? null });
            }
            await tx.append(stream, { round }, 0);
          });
          const direct = await store.read(async (r) => Promise.all(ids.map((key) => r.get('occurrence', key))));
          const prefetched = await store.transact(async (tx) => {
            await tx.prefetch!(
              ids.map((key) => ['occurrence', key] as const),
              [stream, ...ids],
            );
            const heads = await Promise.all([stream, ...ids].map((s) => tx.head(s)));
            return { records: await Promise.all(ids.map((key) => tx.get('occurrence', key))), heads };
          });
          expect(prefetched.records).toEqual(direct);
          expect(prefetched.heads).toEqual([1, ...ids.map(() => 0)]);
        },
      ),
      propertyParameters('prefetch with its BEGIN, hostile ids', 40),
    );
  });

  test('getMany answers the records among the ids that exist, in one statement, with what the transaction wrote', async () => {
    store = await PostgresStore.open(url, { schema: 'get_many' });
    await store.transact(async (tx) => {
      for (const id of ['c1', 'c2', 'c3']) await tx.put('plan-cursor', id, { id }, { expectedVersion: null });
    });
    const ids = ['c3', 'missing', 'c1', 'c2'];
    // Every getMany is one rowsOpening call (which sends it with the BEGIN when one waits, else as a statement).
    const statements = vi.spyOn(Connection.prototype, 'rowsOpening');
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

describePostgres("prefetch on PostgreSQL: an automation's live occurrences", (socketDir) => {
  let url: string;
  let store: PostgresStore;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'prefetch_live');
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await store?.close();
  });
  const occurrence = (automationId: string, state: string, revision: number) => ({
    snapshot: { value: state, context: { automationId, fence: { claimedBy: 'engine-a' } } },
    attributes: { scheduledFor: '2026-12-05T08:00:00.000Z', automationRevision: revision },
  });

  test("answer liveWork with no round trip of its own, as the database would, the job's own writes included", async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_live' });
    await store.transact(async (tx) => {
      await tx.put('occurrence', 'o2', occurrence('auto-a', 'running', 3), { expectedVersion: null });
      await tx.put('occurrence', 'o1', occurrence('auto-a', 'planned', 3), { expectedVersion: null });
      await tx.put('occurrence', 'o3', occurrence('auto-b', 'running', 1), { expectedVersion: null });
      await tx.put('occurrence', 'o4', occurrence('auto-a', 'succeeded', 3), { expectedVersion: null, terminal: true });
    });
    const fromDatabase = await store.read((r) => r.liveWork('occurrence', { automationId: 'auto-a' }));
    expect(fromDatabase.map((w) => w.id)).toEqual(['o1', 'o2']);
    const statements = roundTrips();
    const seen = await store.transact(async (tx) => {
      // Appending too: the feed numbering comes with it, so the append below asks nothing either.
      await tx.prefetch!([], [], { liveOccurrencesOf: 'auto-a', appending: true });
      const before = stepRoundTrips(statements);
      const prefetched = await tx.liveWork('occurrence', { automationId: 'auto-a' });
      const answeredAlone = stepRoundTrips(statements) - before;
      // Another automation, or another question, is the database's to answer.
      const other = await tx.liveWork('occurrence', { automationId: 'auto-b' });
      const askedOther = stepRoundTrips(statements) - before - answeredAlone;
      // The job's own writes since are followed: an occurrence created, one settled, one removed, another
      // automation's and other kinds' writes, an append. The answer is still the job's view, with no round trip.
      const beforeWrites = stepRoundTrips(statements);
      await tx.put('occurrence', 'o5', occurrence('auto-a', 'eligible', 3), { expectedVersion: null });
      await tx.put('occurrence', 'o1', occurrence('auto-a', 'skipped', 3), { expectedVersion: 1, terminal: true });
      await tx.put('occurrence', 'o7', occurrence('auto-b', 'planned', 1), { expectedVersion: null });
      await tx.put('plan-cursor', 'auto-a', { lastSlot: '2026-12-05T08:00:00.000Z' }, { expectedVersion: null });
      await tx.append('occurrence/o5', { kind: 'occurrence.transitioned' }, 0);
      const afterWrites = await tx.liveWork('occurrence', { automationId: 'auto-a' });
      const answeredAfterWrites = stepRoundTrips(statements) - beforeWrites;
      return { prefetched, answeredAlone, other, askedOther, afterWrites, answeredAfterWrites };
    });
    expect(seen.prefetched).toEqual(fromDatabase);
    expect(seen.answeredAlone).toBe(0);
    expect(seen.other.map((w) => w.id)).toEqual(['o3']);
    expect(seen.askedOther).toBe(1);
    expect(seen.afterWrites.map((w) => [w.id, w.state])).toEqual([
      ['o2', 'running'],
      ['o5', 'eligible'],
    ]);
    expect(seen.answeredAfterWrites).toBe(0);
    // What the database says once those writes committed.
    expect(seen.afterWrites).toEqual(await store.read((r) => r.liveWork('occurrence', { automationId: 'auto-a' })));
  });

  test('a removal the job sends ends the followed answer only for the removed occurrence', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_live' });
    await store.transact(async (tx) => {
      await tx.put('occurrence', 'r1', occurrence('auto-r', 'running', 1), { expectedVersion: null });
      await tx.put('occurrence', 'r2', occurrence('auto-r', 'planned', 1), { expectedVersion: null });
    });
    const live = await store.transact(async (tx) => {
      await tx.prefetch!([], [], { liveOccurrencesOf: 'auto-r' });
      await tx.delete('occurrence', 'r2', 1);
      return tx.liveWork('occurrence', { automationId: 'auto-r' });
    });
    expect(live.map((w) => w.id)).toEqual(['r1']);
    expect(await store.read((r) => r.liveWork('occurrence', { automationId: 'auto-r' }))).toEqual(live);
  });

  test('a prefetch after the job wrote leaves liveWork to the database, which sees the staged write', async () => {
    store = await PostgresStore.open(url, { schema: 'prefetch_live' });
    const live = await store.transact(async (tx) => {
      await tx.put('occurrence', 'o6', occurrence('auto-c', 'running', 1), { expectedVersion: null });
      await tx.prefetch!([], [], { liveOccurrencesOf: 'auto-c' });
      return tx.liveWork('occurrence', { automationId: 'auto-c' });
    });
    expect(live.map((w) => w.id)).toEqual(['o6']);
  });
});
