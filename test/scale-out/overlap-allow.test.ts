import pg from 'pg';
import { beforeAll, expect, test } from 'vitest';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { OVERLAP_EXTENSION } from '../../src/schedule/overlap-extension.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { command } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

const LIVE = ['claimed', 'dispatching', 'running'];

describePostgres('overlap allow on PostgreSQL (x-coven-automata.overlap.v1)', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'overlap_allow');
  });

  /** An engine on its own schema whose `daily` runs every quarter hour for 40 minutes under `policy`. */
  async function quarterHourly(schema: string, policy: 'allow' | 'forbid') {
    const store = await PostgresStore.open(url, { schema, poolSize: 3 });
    const h = await harness({
      start: '2026-12-07T08:59:00.000Z',
      store,
      schedule: { cron: '*/15 * * * *', timezone: 'utc' },
      perRunMinutes: 60,
      runtime: new SimulatedRuntime({ durationMs: 40 * 60_000 }),
      extensions: { [OVERLAP_EXTENSION]: { policy } },
    });
    const live = async () => (await h.read.occurrences()).filter((o) => LIVE.includes(o.state as string)).length;
    return { h, store, live };
  }

  test('the one-live index lets occurrences that allow overlap be live together, and only those', async () => {
    const allow = await quarterHourly('allow_side_by_side', 'allow');
    try {
      let most = 0;
      while (allow.h.clock.now() < new Date('2026-12-07T09:35:00.000Z')) {
        allow.h.clock.advance({ minutes: 1 });
        await allow.h.engine.tick();
        most = Math.max(most, await allow.live());
      }
      expect(most).toBe(3);
      const manual = await allow.h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
      expect(manual.outcome, JSON.stringify(manual.error)).toBe('committed');
      expect(await allow.live()).toBe(4);
    } finally {
      await allow.h.engine.stop();
      await allow.store.close();
    }
    // The same schedule under forbid on the same database: the index still keeps one live occurrence.
    const forbid = await quarterHourly('forbid_one_at_a_time', 'forbid');
    try {
      while (forbid.h.clock.now() < new Date('2026-12-07T09:35:00.000Z')) {
        forbid.h.clock.advance({ minutes: 1 });
        await forbid.h.engine.tick();
        expect(await forbid.live()).toBeLessThanOrEqual(1);
      }
      const refused = await forbid.h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
      expect(refused.error?.code).toBe('OVERLAP_FORBIDDEN');
    } finally {
      await forbid.h.engine.stop();
      await forbid.store.close();
    }
  }, 120_000);

  test('the index itself: a second live occurrence of an automation is refused unless it says overlap allow', async () => {
    const store = await PostgresStore.open(url, { schema: 'index_itself', poolSize: 2 });
    await store.close();
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const insert = (id: string, attributes: Record<string, unknown>) =>
        db.query(
          `INSERT INTO index_itself.records (kind, id, version, terminal, data, state, automation_id)
           VALUES ('occurrence', $1, 1, false, $2, 'running', 'same-automation')`,
          [id, JSON.stringify({ attributes })],
        );
      await insert('first', {});
      await expect(insert('second', {})).rejects.toMatchObject({ code: '23505' });
      await insert('beside-1', { overlap: 'allow' });
      await insert('beside-2', { overlap: 'allow' });
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM index_itself.records WHERE automation_id = 'same-automation'`,
      );
      expect(rows[0]!.n).toBe(3);
    } finally {
      await db.end();
    }
  });
});
