import pg from 'pg';
import { beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { eventually } from '../support/eventually.js';
import { packagesAmong, watchModules } from '../support/loaded-modules.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** Runs the open-postgres fixture in a fresh process against `url`: its report and the modules it loaded. */
function openInFreshProcess(url: string, deny: string[] = []) {
  const watch = watchModules(['test/store/fixtures/open-postgres.ts'], { deny, env: { STORE_FIXTURE_URL: url } });
  const lines = watch.stdout.split('\n').filter(Boolean);
  return { urls: watch.urls, report: JSON.parse(lines.at(-1)!) as Record<string, unknown> };
}

/** Runs `sql` on a connection of its own (an operator's session, as far as the store can tell). */
async function asOperator(url: string, sql: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

describePostgres('PostgreSQL store faults', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'faults');
  });

  test('opening a PostgreSQL store loads pg then; without pg installed it is refused, naming what to install', () => {
    const opened = openInFreshProcess(url);
    expect(opened.report).toEqual({ opened: true, version: 1 });
    expect(packagesAmong(opened.urls, ['pg'])).toEqual(['pg']);
    const denied = openInFreshProcess(url, ['pg']);
    expect(denied.report).toMatchObject({
      opened: false,
      name: 'StoreDriverMissingError',
      code: 'CAPABILITY_UNSUPPORTED',
    });
    expect(denied.report.message).toContain('npm install pg');
    expect(packagesAmong(denied.urls, ['pg'])).toEqual([]);
  }, 60_000);

  test('a connection cut mid-transaction commits nothing of it; the store reconnects for the next one', async () => {
    const store = await PostgresStore.open(url, { schema: 'cut' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const doomed = store.transact(async (tx) => {
      await tx.put('definition', 'half', { n: 1 }, { expectedVersion: null });
      await tx.append('definition/half', { kind: 'definition.created' });
      await held;
      await tx.append('definition/half', { kind: 'definition.revised' });
    });
    // The writer's session sits idle in its open transaction: end it from outside, as a failover would.
    const [writer] = await eventually(async () => {
      const rows = await asOperator(
        url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'coven-automata' AND state = 'idle in transaction'",
      );
      return rows.length === 1 ? rows : undefined;
    });
    await asOperator(url, 'SELECT pg_terminate_backend($1)', [writer.pid]);
    release();
    await expect(doomed).rejects.toMatchObject({ name: 'StoreUnavailableError', code: 'INTERNAL', retryable: true });
    await store.read(async (r) => {
      expect(await r.get('definition', 'half')).toBeUndefined();
      expect(await r.readFeed()).toEqual([]);
    });
    const entry = await store.transact(async (tx) => {
      await tx.put('definition', 'whole', { n: 1 }, { expectedVersion: null });
      return tx.append('definition/whole', { kind: 'definition.created' });
    });
    // The cut transaction's entries were never committed: the next one is the feed's first. (Its position is
    // past the positions the cut transaction held: positions come from transaction ids and may have gaps.)
    expect(entry.sequence).toBe(0);
    expect(await store.read((r) => r.readFeed())).toEqual([{ ...entry, data: { kind: 'definition.created' } }]);
    await store.close();
  });

  test('a connection cut in the middle of a group answers every job of it, the ones it kept from running too', async () => {
    const store = await PostgresStore.open(url, { schema: 'cut_group', applicationName: 'coven cut-group' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Queued together, so they share one group: the first holds the group open, the others wait their turn in it.
    const group = [
      store.transact(async (tx) => {
        // A read sends the group's BEGIN (which otherwise waits for the first statement), so the group is open.
        await tx.get('definition', 'first');
        await tx.put('definition', 'first', { n: 1 }, { expectedVersion: null });
        await held;
        await tx.put('definition', 'first', { n: 2 }, { expectedVersion: 1 });
      }),
      store.transact((tx) => tx.put('definition', 'second', { n: 1 }, { expectedVersion: null })),
      store.transact((tx) => tx.put('definition', 'third', { n: 1 }, { expectedVersion: null })),
    ];
    const [writer] = await eventually(async () => {
      const rows = await asOperator(
        url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'coven cut-group' AND state = 'idle in transaction'",
      );
      return rows.length === 1 ? rows : undefined;
    });
    await asOperator(url, 'SELECT pg_terminate_backend($1)', [writer.pid]);
    release();
    const answers = await Promise.allSettled(group);
    expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(await store.read((r) => r.list('definition'))).toEqual([]);
    await store.close();
  });
});
