// graphile-worker 0.17 on PostgreSQL: a runner with `concurrency` jobs at once, woken by LISTEN/NOTIFY; jobs
// added through WorkerUtils (addJobs for a burst: one statement). Defaults otherwise: no local queue, no batched
// completion, so each completion is its own durable commit. A job completes when that commit returns: the
// runner's pool is ours, and its clients report when a completing DELETE came back. (The runner's `job:complete`
// event is emitted before: 0.17.3's worker starts the completion without awaiting it, then emits.)
import { appendFileSync } from 'node:fs';
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import type { HeldJobs, JobHooks, SystemUnderTest, WorkerSettings } from './system.js';

const TASK = 'bench';
const quiet = new Logger(() => () => undefined);

export class GraphileWorkerSystem implements SystemUnderTest {
  private utils: WorkerUtils | undefined;
  private runner: Runner | undefined;
  private pool: pg.Pool | undefined;

  constructor(private readonly url: string) {}

  async prepare(): Promise<void> {
    this.utils = await makeWorkerUtils({ connectionString: this.url, logger: quiet });
    await this.utils.migrate();
  }

  async startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void> {
    // Job id -> bench key, learned as each job runs; a completing DELETE names job ids.
    const keys = new Map<string, string>();
    // The library's advice for its pool: concurrency + 2 when that is above 10.
    this.pool = new pg.Pool({ connectionString: this.url, max: Math.max(10, settings.concurrency + 2) });
    // An idle client's error (the server going away at the end) must not crash the child; graphile-worker asks for it.
    this.pool.on('error', () => undefined);
    this.pool.on('connect', (client) =>
      reportCompletions(client, (id) => {
        // Every job's key is learned before its completion is sent; an id not known is none of this run's.
        const key = keys.get(id);
        if (key !== undefined) hooks.completed(key);
      }),
    );
    this.runner = await run({
      pgPool: this.pool,
      concurrency: settings.concurrency,
      noHandleSignals: true,
      logger: quiet,
      taskList: {
        [TASK]: async (payload, helpers) => {
          const key = String((payload as { i: number }).i);
          keys.set(String(helpers.job.id), key);
          if (settings.executionLog !== undefined) appendFileSync(settings.executionLog, `${key}\n`);
          hooks.started(key);
        },
      },
    });
  }

  async submitBurst(ids: number[]): Promise<string[]> {
    await this.utils!.addJobs(ids.map((i) => ({ identifier: TASK, payload: { i } })));
    return ids.map(String);
  }

  async submitOne(id: number): Promise<string> {
    await this.utils!.addJob(TASK, { i: id });
    return String(id);
  }

  async held(jobs: number): Promise<HeldJobs> {
    // A completed job is deleted: whatever is left in the table is not done.
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM graphile_worker._private_jobs');
      return { accepted: jobs, completed: jobs - Number(rows[0]!.n) };
    } finally {
      await client.end();
    }
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
    await this.utils?.release();
    await this.pool?.end();
  }
}

/** graphile-worker's completion statements: `delete from <schema>._private_jobs … where id = $1` (or `= n` of $1[]). */
const COMPLETING = /^\s*(with j as \(\s*)?delete from \S+\._private_jobs/i;

/**
 * Calls `completed` with each job id a completing DELETE sent on `client` named, once the statement came back:
 * its commit is durable then (each runs in autocommit; synchronous_commit is on).
 */
function reportCompletions(client: pg.PoolClient, completed: (id: string) => void): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const result = query(...args);
    const config = args[0] as { text?: unknown; values?: unknown[] } | undefined;
    if (result instanceof Promise && typeof config?.text === 'string' && COMPLETING.test(config.text)) {
      const named = config.values?.[0];
      const ids = (Array.isArray(named) ? named : [named]).map(String);
      void result.then(
        () => ids.forEach(completed),
        () => undefined,
      );
    }
    return result;
  };
}
