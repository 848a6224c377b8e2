import { expect, test, vi } from 'vitest';
import { PostgresReader } from '../../src/store/postgres/postgres-reader.js';
import { harness } from '../support/engine-harness.js';
import { describePostgres, storePerTest } from '../support/postgres.js';

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
});
