// graphile-worker 0.17 on PostgreSQL: a runner with `concurrency` jobs at once, woken by LISTEN/NOTIFY; jobs
// added through WorkerUtils (addJobs for a burst: one statement). Defaults otherwise: no local queue, no batched
// completion, so each completion is its own durable commit. Completion is the runner's `job:complete` event,
// emitted once the outcome was written back to the database.
import { appendFileSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { Logger, makeWorkerUtils, run, type Runner, type WorkerEvents, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import type { HeldJobs, JobHooks, SystemUnderTest, WorkerSettings } from './system.js';

const TASK = 'bench';
const quiet = new Logger(() => () => undefined);

export class GraphileWorkerSystem implements SystemUnderTest {
  private utils: WorkerUtils | undefined;
  private runner: Runner | undefined;

  constructor(private readonly url: string) {}

  async prepare(): Promise<void> {
    this.utils = await makeWorkerUtils({ connectionString: this.url, logger: quiet });
    await this.utils.migrate();
  }

  async startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void> {
    const events = new EventEmitter() as WorkerEvents;
    events.on('job:complete', ({ job, error }) => {
      if (error === null || error === undefined) hooks.completed(String((job.payload as { i: number }).i));
    });
    this.runner = await run({
      connectionString: this.url,
      concurrency: settings.concurrency,
      // The library's advice for its pool: concurrency + 2 when that is above 10.
      maxPoolSize: Math.max(10, settings.concurrency + 2),
      noHandleSignals: true,
      logger: quiet,
      events,
      taskList: {
        [TASK]: async (payload) => {
          const key = String((payload as { i: number }).i);
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
  }
}
