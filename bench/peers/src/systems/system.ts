// What the workloads need from a system under test. Jobs are numbered 0…n-1; each system names its jobs by a
// key of its own (the number for the peers, the occurrence id for coven) and reports starts and completions by it.

/** Called by the system as jobs start (the handler begins) and complete (the system recorded the outcome). */
export interface JobHooks {
  started(key: string): void;
  completed(key: string): void;
}

export interface WorkerSettings {
  concurrency: number;
  /** When set, every job execution appends its key to this file first (the crash workload counts them). */
  executionLog?: string;
}

/** What the restarted system holds once it finished, or when its time was up. */
export interface HeldJobs {
  accepted: number;
  completed: number;
}

export interface SystemUnderTest {
  /**
   * Schema, queues, and for coven `slots` definitions (job i runs definition i mod slots): set-up, not measured.
   * `fresh` is false on a crash restart, which finds all of it made.
   */
  prepare(slots: number, fresh: boolean): Promise<void>;
  /** Starts consuming jobs: from here on starts and completions reach `hooks`. */
  startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void>;
  /** Submits jobs `ids` at once; answers their keys in order. */
  submitBurst(ids: number[]): Promise<string[]>;
  /** Submits one job; answers its key, or undefined when the system refused it. */
  submitOne(id: number): Promise<string | undefined>;
  /**
   * For systems whose completion is not observable as it happens (pg-boss completes a job after its handler
   * returned, without telling anyone): how many jobs the system recorded as completed, and when (epoch ms, by key).
   */
  recorded?: { count(): Promise<number>; times(): Promise<Map<string, number>> };
  /** Counts of the jobs the system holds after a restart, by its own state. */
  held(jobs: number): Promise<HeldJobs>;
  stop(): Promise<void>;
}

/** Wall-clock now in epoch milliseconds, sub-millisecond, comparable with the database servers' timestamps. */
export const now = (): number => performance.timeOrigin + performance.now();
