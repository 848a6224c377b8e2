import { afterEach, beforeAll, expect, test } from 'vitest';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { MIN_CHANGES_BEFORE_ANALYZE } from '../../src/store/postgres/planner-statistics.js';
import { eventually } from '../support/eventually.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** Manual vacuums and analyzes of the schema's records and feed tables so far, by the server's statistics. */
async function statisticsCounts(url: string, schema: string): Promise<Record<string, [number, number]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ relname: string; vacuums: string; analyzes: string }>(
      `SELECT relname, vacuum_count AS vacuums, analyze_count AS analyzes FROM pg_stat_user_tables
        WHERE schemaname = $1 AND relname IN ('records', 'log')`,
      [schema],
    );
    return Object.fromEntries(rows.map((r) => [r.relname, [Number(r.vacuums), Number(r.analyzes)]]));
  } finally {
    await client.end();
  }
}

/** The columns of the schema's tables that have statistics, by table, sorted. */
async function analyzedColumns(url: string, schema: string): Promise<Record<string, string[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ tablename: string; attname: string }>(
      'SELECT tablename, attname FROM pg_stats WHERE schemaname = $1 ORDER BY tablename, attname',
      [schema],
    );
    const columns: Record<string, string[]> = {};
    for (const row of rows) (columns[row.tablename] ??= []).push(row.attname);
    return columns;
  } finally {
    await client.end();
  }
}

/** Writes `rows` rows, half records and half feed entries, in transactions of two hundred. */
async function grow(store: PostgresStore, prefix: string, rows: number): Promise<void> {
  for (let start = 0; start < rows; start += 200)
    await store.transact(async (tx) => {
      for (let i = start; i < Math.min(rows, start + 200); i += 2) {
        await tx.put('occurrence', `${prefix}-${i}`, { n: i }, { expectedVersion: null });
        await tx.append(`stream-${prefix}-${i}`, { n: i });
      }
    });
}

describePostgres('a young store keeps its planner statistics up as it grows its tables', (socketDir) => {
  let url: string;
  const open: PostgresStore[] = [];
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'table_statistics');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((store) => store.close()));
  });

  test('its own writes reaching the tables’ size analyze both tables once, their JSON left out', async () => {
    const store = await PostgresStore.open(url, { schema: 'statistics_young' });
    open.push(store);
    await grow(store, 'a', MIN_CHANGES_BEFORE_ANALYZE - 200);
    expect(await statisticsCounts(url, 'statistics_young')).toEqual({ records: [0, 0], log: [0, 0] });
    await grow(store, 'b', 200);
    // The server counts an analysis before its transaction commits the statistics: wait for both.
    const counts = await eventually(async () => {
      const now = await statisticsCounts(url, 'statistics_young');
      const columns = await analyzedColumns(url, 'statistics_young');
      return now.records![1] > 0 && now.log![1] > 0 && columns.records && columns.log ? now : undefined;
    });
    expect(counts).toEqual({ records: [0, 1], log: [0, 1] });
    expect(await analyzedColumns(url, 'statistics_young')).toEqual({
      records: expect.arrayContaining(['kind', 'id', 'terminal', 'state', 'automation_id', 'scheduled_for']),
      log: ['position', 'sequence', 'stream'],
    });
    expect((await analyzedColumns(url, 'statistics_young')).records).not.toContain('data');
    // The tables now hold about a thousand rows: as many changes again before the next run.
    await grow(store, 'c', 400);
    await store.close();
    expect(await statisticsCounts(url, 'statistics_young')).toEqual({ records: [0, 1], log: [0, 1] });
  });
});
