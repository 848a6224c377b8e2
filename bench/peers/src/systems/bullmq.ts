// BullMQ 6 on Redis (the driver's server runs with appendfsync always): one Worker with `concurrency` jobs at
// once; a burst is one addBulk. Completion is the worker's `completed` event, emitted once the job was moved to
// the completed set. Defaults otherwise (stalled-job check every 30 s, lock 30 s, completed jobs kept).
import { appendFileSync } from 'node:fs';
import { Queue, Worker } from 'bullmq';
import type { HeldJobs, JobHooks, SystemUnderTest, WorkerSettings } from './system.js';

const QUEUE = 'bench';
interface Data {
  i: number;
}

export class BullmqSystem implements SystemUnderTest {
  private readonly connection;
  private queue: Queue<Data> | undefined;
  private worker: Worker<Data> | undefined;

  constructor(port: number) {
    // Workers block on Redis commands, so BullMQ wants ioredis never to give up retrying one.
    this.connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  }

  async prepare(): Promise<void> {
    this.queue = new Queue<Data>(QUEUE, { connection: this.connection });
    await this.queue.waitUntilReady();
  }

  async startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void> {
    this.worker = new Worker<Data>(
      QUEUE,
      async (job) => {
        const key = String(job.data.i);
        if (settings.executionLog !== undefined) appendFileSync(settings.executionLog, `${key}\n`);
        hooks.started(key);
      },
      { connection: this.connection, concurrency: settings.concurrency },
    );
    this.worker.on('completed', (job) => hooks.completed(String(job.data.i)));
    this.worker.on('error', (error) => process.stderr.write(`bullmq worker: ${error.message}\n`));
    await this.worker.waitUntilReady();
  }

  async submitBurst(ids: number[]): Promise<string[]> {
    await this.queue!.addBulk(ids.map((i) => ({ name: QUEUE, data: { i } })));
    return ids.map(String);
  }

  async submitOne(id: number): Promise<string> {
    await this.queue!.add(QUEUE, { i: id });
    return String(id);
  }

  async held(): Promise<HeldJobs> {
    const counts = await this.queue!.getJobCounts();
    const accepted = Object.values(counts).reduce((a, b) => a + b, 0);
    return { accepted, completed: counts.completed ?? 0 };
  }

  async stop(): Promise<void> {
    await this.worker?.close();
    await this.queue?.close();
  }
}
