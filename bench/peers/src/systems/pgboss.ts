// pg-boss 10 on PostgreSQL. v10 has no team size: concurrency is `concurrency` workers (work() calls), each
// fetching one job at a time and polling every 0.5 s (the least pg-boss accepts; its default is 2 s). A worker
// sleeps out its polling interval after every fetch, found jobs or not. A burst is one insert(). pg-boss
// completes a job after the handler returned without telling the handler, so completion instants are the
// job table's `completed_on`, read once all jobs are completed. Defaults otherwise (expiry 15 min, 2 retries).
import { appendFileSync } from 'node:fs';
import PgBoss from 'pg-boss';
import pg from 'pg';
import type { HeldJobs, JobHooks, SystemUnderTest, WorkerSettings } from './system.js';

const QUEUE = 'bench';
const POLLING_INTERVAL_S = 0.5;
interface Data {
  i: number;
}

export class PgBossSystem implements SystemUnderTest {
  private boss: PgBoss | undefined;
  private readonly reader: pg.Pool;

  constructor(
    private readonly url: string,
    private readonly concurrency: number,
  ) {
    this.reader = new pg.Pool({ connectionString: url, max: 1 });
  }

  async prepare(_slots: number, fresh: boolean): Promise<void> {
    // The pool as graphile-worker's is sized: concurrency + 2 when that is above pg-boss's default of 10.
    this.boss = new PgBoss({ connectionString: this.url, max: Math.max(10, this.concurrency + 2) });
    this.boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
    await this.boss.start();
    if (fresh) await this.boss.createQueue(QUEUE);
  }

  async startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void> {
    for (let w = 0; w < settings.concurrency; w++)
      await this.boss!.work<Data>(QUEUE, { batchSize: 1, pollingIntervalSeconds: POLLING_INTERVAL_S }, async (jobs) => {
        for (const job of jobs) {
          const key = String(job.data.i);
          if (settings.executionLog !== undefined) appendFileSync(settings.executionLog, `${key}\n`);
          hooks.started(key);
        }
      });
  }

  async submitBurst(ids: number[]): Promise<string[]> {
    await this.boss!.insert(ids.map((i) => ({ name: QUEUE, data: { i } })));
    return ids.map(String);
  }

  async submitOne(id: number): Promise<string> {
    await this.boss!.send(QUEUE, { i: id });
    return String(id);
  }

  readonly recorded = {
    count: async (): Promise<number> => {
      const { rows } = await this.reader.query<{ n: string }>(
        "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'",
        [QUEUE],
      );
      return Number(rows[0]!.n);
    },
    times: async (): Promise<Map<string, number>> => {
      const { rows } = await this.reader.query<{ i: string; at: Date }>(
        "SELECT data->>'i' AS i, completed_on AS at FROM pgboss.job WHERE name = $1 AND state = 'completed'",
        [QUEUE],
      );
      return new Map(rows.map((r) => [r.i, r.at.getTime()]));
    },
  };

  async held(): Promise<HeldJobs> {
    const { rows } = await this.reader.query<{ state: string; n: string }>(
      'SELECT state, count(*) AS n FROM pgboss.job WHERE name = $1 GROUP BY state',
      [QUEUE],
    );
    const accepted = rows.reduce((sum, r) => sum + Number(r.n), 0);
    return { accepted, completed: Number(rows.find((r) => r.state === 'completed')?.n ?? 0) };
  }

  async stop(): Promise<void> {
    // Not graceful: a crash run's restart must find what the kill left, and a measured run is over.
    await this.boss?.stop({ graceful: false, wait: true });
    await this.reader.end();
  }
}
