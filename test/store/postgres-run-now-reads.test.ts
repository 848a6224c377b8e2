import { expect, test, vi } from 'vitest';
import pg from 'pg';
import { command, expectRejected } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { describePostgres, storePerTest } from '../support/postgres.js';

/** The SQL and values of every statement the store sends while `during` runs. */
async function sentDuring(during: () => Promise<unknown>): Promise<Array<{ text: string; values: unknown[] }>> {
  const spy = vi.spyOn(pg.Client.prototype, 'query');
  try {
    await during();
    return spy.mock.calls.map(([query, values]) =>
      typeof query === 'string'
        ? { text: query, values: (values as unknown[] | undefined) ?? [] }
        : { text: (query as pg.QueryConfig).text, values: (query as pg.QueryConfig).values ?? [] },
    );
  } finally {
    spy.mockRestore();
  }
}

describePostgres("a manual run's first reads on PostgreSQL", (socketDir) => {
  const stores = storePerTest(socketDir, 'run_now_reads');

  test('its overlap check and pinned revision travel with its first statement; overlap is still refused', async () => {
    const h = await harness({ store: await stores.open() });
    // A pass makes the engine know the definition (and so the revision a manual run will pin).
    await h.engine.tick();
    const sent = await sentDuring(() => h.ok(command('occurrence.runNow.v1', { automationId: 'daily' })));
    const liveWorkReads = sent.filter((s) => /^SELECT id, state AS "state"/.test(s.text));
    const revisionReads = sent.filter(
      (s) => /WHERE kind = \$1 AND id = \$2/.test(s.text) && s.values[0] === 'definition-revision',
    );
    expect(liveWorkReads).toEqual([]);
    expect(revisionReads).toEqual([]);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    // The second request's overlap check is answered by the prefetch too, and sees the first run live.
    expectRejected(
      await h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' })),
      'OVERLAP_FORBIDDEN',
      409,
    );
    await h.engine.stop();
  });

  test('an engine that has not seen the definition yet still reads the revision it pins', async () => {
    const h = await harness({ store: await stores.open('run_now_reads_cold') });
    const response = await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
    expect(response.result).toMatchObject({ status: 'claimed' });
    expect(h.runtime.launches).toHaveLength(1);
    await h.engine.stop();
  });
});
