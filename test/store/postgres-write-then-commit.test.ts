import { afterEach, beforeAll, expect, test, vi } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { StoreConflictError, StreamSequenceError, type StoreTransaction } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { propertyParameters } from '../support/property.js';

/** The SQL of each message a store sends the server, PREPAREs (once per connection and statement) left out. */
function messagesDuring(): () => string[] {
  const spy = vi.spyOn(pg.Client.prototype, 'query');
  return () =>
    spy.mock.calls
      .map(([query]) => (typeof query === 'string' ? query : (query as pg.QueryConfig).text))
      .filter((text) => !text.startsWith('PREPARE') && !text.includes('pg_notify'));
}

/** A run record as the engine writes one: its context names the occurrence and fence it runs for. */
const run = (occurrenceId: string, fenceGeneration: number) => ({
  snapshot: { value: 'accepted', context: { occurrenceId, fenceGeneration } },
});

describePostgres("a job alone: its writes carry the transaction's COMMIT", (socketDir) => {
  let url: string;
  const open: PostgresStore[] = [];
  const storeOn = async (schema: string) => {
    const store = await PostgresStore.open(url, { schema });
    open.push(store);
    return store;
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'write_then_commit');
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(open.splice(0).map((store) => store.close()));
  });

  test('writes and COMMIT go as one message; a job that staged nothing commits as before', async () => {
    const store = await storeOn('one_message');
    const sent = messagesDuring();
    await store.transact(async (tx) => {
      await tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null });
      await tx.put('run', 'r1', { n: 1 }, { expectedVersion: null });
    });
    // BEGIN too: the job read nothing, so its first statement is its write.
    expect(sent()).toHaveLength(1);
    expect(sent()[0]).toMatch(/^BEGIN ISOLATION LEVEL REPEATABLE READ; .*; EXECUTE coven_\d+_x\(.*\); COMMIT$/s);
    await store.transact(async (tx) => {
      await tx.put('occurrence', 'o2', { n: 1 }, { expectedVersion: null });
      expect((await tx.list('occurrence')).map((r) => r.id)).toEqual(['o1', 'o2']);
    });
    // The list sent the staged write first: nothing was left to carry the COMMIT, which then goes alone.
    expect(sent().slice(1).at(-1)).toBe('COMMIT');
    expect(await store.read((r) => r.list('occurrence'))).toHaveLength(2);
  });

  test('a value no simple query can carry (a NUL) is sent as a parameter and refused as before', async () => {
    const store = await storeOn('nul');
    const withNul = store.transact((tx) => tx.put('occurrence', 'a\u0000b', { n: 1 }, { expectedVersion: null }));
    // The server's own refusal (no text column holds a NUL), not a broken connection.
    await expect(withNul).rejects.toMatchObject({ code: '22021' });
    await store.transact((tx) => tx.put('occurrence', 'ab', { n: 1 }, { expectedVersion: null }));
    expect((await store.read((r) => r.list('occurrence'))).map((r) => r.id)).toEqual(['ab']);
  });

  test('an insert of an id another engine took since: refused by name, nothing of the job committed', async () => {
    const first = await storeOn('taken_id');
    const second = await storeOn('taken_id');
    await second.transact((tx) => tx.put('occurrence', 'taken', { by: 'second' }, { expectedVersion: null }));
    const refused = first.transact(async (tx) => {
      await tx.put('occurrence', 'fresh', { by: 'first' }, { expectedVersion: null });
      await tx.put('occurrence', 'taken', { by: 'first' }, { expectedVersion: null });
      await tx.append('occurrence/fresh', { made: true }, 0);
    });
    await expect(refused).rejects.toBeInstanceOf(StoreConflictError);
    await expect(refused).rejects.toMatchObject({
      details: { kind: 'occurrence', id: 'taken', expectedVersion: null },
    });
    const [fresh, taken, head] = await first.read(async (r) => [
      await r.get('occurrence', 'fresh'),
      await r.get('occurrence', 'taken'),
      await r.head('occurrence/fresh'),
    ]);
    expect([fresh, taken?.data, head]).toEqual([undefined, { by: 'second' }, 0]);
    // The connection is fit for the next transaction.
    await first.transact((tx) => tx.put('occurrence', 'fresh', { by: 'first' }, { expectedVersion: null }));
    expect(await first.read((r) => r.version('occurrence', 'fresh'))).toBe(1);
  });

  test('an insert that would break a uniqueness rule (one run per fence) is refused by name', async () => {
    const store = await storeOn('one_run_per_fence');
    await store.transact((tx) => tx.put('run', 'run-a', run('occ-1', 1), { expectedVersion: null }));
    const refused = store.transact(async (tx) => {
      await tx.put('occurrence', 'occ-2', { n: 1 }, { expectedVersion: null });
      await tx.put('run', 'run-b', run('occ-1', 1), { expectedVersion: null });
    });
    await expect(refused).rejects.toMatchObject({
      name: 'StoreConflictError',
      message: 'run run-b would break a uniqueness rule',
      details: { kind: 'run', id: 'run-b', expectedVersion: null },
    });
    expect(await store.read((r) => r.list('occurrence'))).toEqual([]);
  });

  test('an append at a sequence another engine took: StreamSequenceError, nothing of the job committed', async () => {
    const first = await storeOn('taken_sequence');
    const second = await storeOn('taken_sequence');
    await second.transact((tx) => tx.append('occurrence/o1', { by: 'second' }, 0));
    const lost = first.transact(async (tx) => {
      await tx.put('occurrence', 'o1', { n: 1 }, { expectedVersion: null });
      // Known new to this body, so not looked up: the sent append meets the sequence the other engine took.
      await tx.append('occurrence/o1', { by: 'first' }, 0);
    });
    await expect(lost).rejects.toBeInstanceOf(StreamSequenceError);
    await expect(lost).rejects.toMatchObject({ details: { stream: 'occurrence/o1' } });
    expect(await first.read((r) => r.get('occurrence', 'o1'))).toBeUndefined();
    expect(await first.read((r) => r.readLog('occurrence/o1'))).toHaveLength(1);
  });

  test('any text in ids, columns and data is written as it was given', async () => {
    const store = await storeOn('literals');
    // Quotes, backslashes (an E-prefixed literal), braces and commas, NUL as JSON writes it, the schema placeholder.
    const text = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.constantFrom("it's", 'back\\slash', "\\'", '{a,b}', '"q"', 'NULL', '\u0000', '{s}', "'); COMMIT; --"),
    );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 8 }), text, text, async (idPart, column, payload) => {
        // In JSON a NUL is an escape; in a column (the automation id here) no text can hold one.
        const id = `${round++}:${idPart.replaceAll('\u0000', '')}`;
        const automation = column.replaceAll('\u0000', '');
        const data = { payload, nested: [payload, { payload }], snapshot: { context: { automationId: automation } } };
        const write = (tx: StoreTransaction) => tx.put('occurrence', id, data, { expectedVersion: null });
        const written = await store.transact(write);
        const read = await store.read((r) => r.get('occurrence', id));
        expect(read).toEqual(written);
        expect(read?.data).toEqual(data);
        // The automation id also went into its column, which the live-work query matches on.
        const live = await store.read((r) => r.liveWork('occurrence', { automationId: automation }));
        expect(live.map((w) => [w.id, w.automationId])).toContainEqual([id, automation]);
      }),
      propertyParameters('a job alone writes any text as given', 40),
    );
  });
});
