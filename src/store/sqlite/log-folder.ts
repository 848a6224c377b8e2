import type Database from 'better-sqlite3';
import { CheckpointThread } from './checkpoint-thread.js';

/**
 * Rows written before a pass's end folds the log: about what SQLite's default 1000-page bound held. A daemon
 * under a steady trickle passes often; folding a few pages each time cost more (a database-file fsync each)
 * than it saved, raising claim latency.
 */
export const CHECKPOINT_AFTER_WRITES = 1_024;

/**
 * When and where a SQLite store's write-ahead log is folded into its database file: a PASSIVE checkpoint (it
 * waits for no one) once {@link CHECKPOINT_AFTER_WRITES} rows were written since the last, on a connection in a
 * thread of its own ({@link CheckpointThread}), one at a time. It copies only what was committed, so a group
 * open on the writer is left for the next fold.
 */
export class LogFolder {
  private writes = 0;
  /** The thread folds run on, started by the first one. */
  private thread: CheckpointThread | undefined;
  /** The fold in flight, which close waits for. */
  private folding: Promise<void> | undefined;
  /** No thread could be started: the writer folds the log. */
  private inline = false;

  /**
   * @param tolerated answers whether a failed fold may be let go (SQLite busy: the next fold tries again);
   * any other failure is thrown to the caller.
   */
  constructor(
    private readonly file: string,
    private readonly writer: Database.Database,
    private readonly tolerated: (error: unknown) => boolean,
  ) {}

  /** Counts rows a commit wrote. */
  wrote(rows: number): void {
    this.writes += rows;
  }

  /** Folds the log if enough was written and no fold is running; resolves once that fold ended. */
  async fold(): Promise<void> {
    if (this.folding !== undefined || this.writes < CHECKPOINT_AFTER_WRITES) return;
    const writes = this.writes;
    this.folding = this.checkpoint().then(
      (folded) => void (folded && (this.writes -= writes)),
      (error: unknown) => {
        if (!this.tolerated(error)) throw error;
      },
    );
    try {
      await this.folding;
    } finally {
      this.folding = undefined;
    }
  }

  /** Waits for a fold in flight and ends the thread: the writer must be the last connection to close. */
  async close(): Promise<void> {
    await this.folding?.catch(() => undefined);
    await this.thread?.close();
  }

  /** Folds the log; false when it cannot now (no thread, and the writer holds a group open: the next fold). */
  private async checkpoint(): Promise<boolean> {
    if (this.thread === undefined && !this.inline) {
      try {
        this.thread = CheckpointThread.start(this.file);
      } catch {
        // No thread to be had (a runtime without worker threads): the writer folds the log itself from now on.
        this.inline = true;
      }
    }
    // A thread that ended (its connection failed to open, or it died) leaves the folding to the writer.
    if (this.thread !== undefined && !this.thread.ended) await this.thread.checkpoint();
    else if (this.writer.inTransaction) return false;
    else this.writer.pragma('wal_checkpoint(PASSIVE)');
    return true;
  }
}
