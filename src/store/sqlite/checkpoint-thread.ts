import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** A checkpoint the thread could not run: SQLite's error code and message, raised again on the caller's side. */
class CheckpointError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

type Reply = { folded: true } | { error: string; code?: string } | { closed: true };

/**
 * The thread's own program, evaluated as CommonJS (so it needs no loader: the same text runs under tsx, vitest
 * and a built package). Its connection runs with `synchronous = FULL`, so a checkpoint syncs the log before it
 * copies frames and the database file before the log may be reused, whatever the writer's setting.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = FULL');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.postMessage({ closed: true });
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ folded: true });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message), code: error && error.code });
  }
});
`;

/**
 * Folds a SQLite store's write-ahead log into its database file on a connection of its own, in a thread of its
 * own: a checkpoint copies pages and fsyncs the file, which on the writer's thread stopped every commit and
 * request behind it (about a twelfth of a burst's time). The writer keeps committing meanwhile: a PASSIVE
 * checkpoint takes no lock a writer needs and copies only frames already committed.
 */
export class CheckpointThread {
  private readonly worker: Worker;
  private readonly waiting: Array<(reply: Reply) => void> = [];
  private exited = false;

  private constructor(path: string) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { driver, path } });
    // Idle, the thread does not keep the process alive; the store closes it.
    this.worker.unref();
    this.worker.on('message', (reply: Reply) => this.waiting.shift()?.(reply));
    this.worker.on('error', (error) => this.fail(error.message));
    this.worker.on('exit', () => this.fail('the checkpoint thread exited'));
  }

  /** Whether the thread has ended (closed, or failed): it takes no further checkpoint. */
  get ended(): boolean {
    return this.exited;
  }

  /** A thread for the database at `path` (opened there, so the file must exist). */
  static start(path: string): CheckpointThread {
    return new CheckpointThread(path);
  }

  /** One PASSIVE checkpoint; rejects with SQLite's error (its `code` kept) when the thread could not run it. */
  async checkpoint(): Promise<void> {
    const reply = await this.ask('checkpoint');
    if ('error' in reply) throw new CheckpointError(reply.error, reply.code);
    if (!('folded' in reply)) throw new CheckpointError('the checkpoint thread closed', undefined);
  }

  /** Closes the thread's connection and ends the thread; a checkpoint in flight finishes first. */
  async close(): Promise<void> {
    if (!this.exited) await this.ask('close');
    await this.worker.terminate();
  }

  private ask(message: 'checkpoint' | 'close'): Promise<Reply> {
    if (this.exited) return Promise.resolve({ error: 'the checkpoint thread has ended' });
    return new Promise<Reply>((resolve) => {
      this.waiting.push(resolve);
      this.worker.ref();
      this.worker.postMessage(message);
    }).finally(() => {
      if (this.waiting.length === 0 && !this.exited) this.worker.unref();
    });
  }

  private fail(reason: string): void {
    this.exited = true;
    for (const answer of this.waiting.splice(0)) answer({ error: reason });
  }
}
