import { expect, test, vi } from 'vitest';
import { PostgresReader } from '../../src/store/postgres/postgres-reader.js';
import { harness } from '../support/engine-harness.js';
import { describePostgres, sentMessages, storePerTest } from '../support/postgres.js';

/** The kinds of the records read one by one from the database (not answered by a prefetch) while `during` runs. */
async function singleReadsDuring(during: () => Promise<unknown>): Promise<string[]> {
  const spy = vi.spyOn(PostgresReader.prototype, 'get');
  try {
    await during();
    return spy.mock.calls.map(([kind]) => kind);
  } finally {
    spy.mockRestore();
  }
}

const ENTITY_KINDS = ['occurrence', 'run', 'attempt', 'run-hold'];

describePostgres("a scheduled occurrence's pass reads on PostgreSQL", (socketDir) => {
  const stores = storePerTest(socketDir, 'pass_reads');

  test('dispatch and settlement read their entities ahead and at once, not one record at a time', async () => {
    const h = await harness({ store: await stores.open() });
    h.clock.set('2026-03-02T09:00:00.000Z');
    const dispatching = await singleReadsDuring(() => h.engine.tick());
    expect(h.runtime.launches).toHaveLength(1);
    expect(dispatching.filter((kind) => ENTITY_KINDS.includes(kind))).toEqual([]);
    // The session has exited by now: the pass observes it and settles the attempt, run and occurrence.
    h.clock.set('2026-03-02T09:02:00.000Z');
    const settling = await singleReadsDuring(() => h.engine.tick());
    expect((await h.read.runs()).map((r) => r.state)).toEqual(['succeeded']);
    expect(settling.filter((kind) => ENTITY_KINDS.includes(kind))).toEqual([]);
    // What the run pinned is named in the run, so it is read after the prefetch: once.
    expect(settling.filter((kind) => kind === 'definition-revision')).toHaveLength(1);
    await h.engine.stop();
  });

  test("a slot's planning, claim and dispatch send its reads, heads, transaction id and BEGIN with other statements", async () => {
    const h = await harness({ store: await stores.open('planning_reads') });
    h.clock.set('2026-03-02T09:00:00.000Z');
    const sent = sentMessages();
    await h.engine.tick();
    const texts = sent.texts();
    vi.restoreAllMocks();
    expect((await h.read.occurrences()).map((o) => o.scheduledFor)).toEqual(['2026-03-02T09:00:00.000Z']);
    const naming = (kind: string) => texts.filter((text) => text.includes(`'${kind}'`));
    // The slot's occurrence and key travel with the definition, quarantine and cursor, and so does the transaction
    // id its feed entry's position needs: no statement of their own.
    const [slotReads, ...more] = naming('occurrence-key');
    expect(more).toEqual([]);
    expect(slotReads).toContain("'plan-cursor'");
    expect(texts).not.toContain('SELECT pg_current_xact_id()::text AS xid');
    // The claim batch reads its occurrences' stream heads with the occurrences, not one statement per head.
    expect(texts.filter((text) => text.startsWith('SELECT MAX(sequence)'))).toEqual([]);
    // The dispatch's lock on its occurrence is its transaction's first statement: the BEGIN travels with it.
    const afterBareBegin = texts.filter((_, i) => i > 0 && /^BEGIN [^;]*;[^;]*$/.test(texts[i - 1]!));
    expect(afterBareBegin.filter((text) => text.endsWith('AND id = $2 FOR UPDATE SKIP LOCKED'))).toEqual([]);
    await h.engine.stop();
  });
});
