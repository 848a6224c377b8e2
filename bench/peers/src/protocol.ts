// What the driver (main.ts) and one system's child process (child.ts) say to each other.

/** The systems compared: the peers, then coven on each of its durable stores. */
export const SYSTEMS = [
  'graphile-worker',
  'bullmq',
  'pg-boss',
  'coven-sqlite',
  'coven-json',
  'coven-postgres',
  'coven-sqlite-polled',
  'coven-memory',
  'coven-sqlite-baseline',
  'coven-postgres-baseline',
] as const;
export type SystemName = (typeof SYSTEMS)[number];
/** coven on the engine of the baseline revision (`--baseline`), each beside the same store's system. */
export const BASELINES: readonly SystemName[] = ['coven-sqlite-baseline', 'coven-postgres-baseline'];
/**
 * Run only on request: `coven-sqlite-polled` (coven without exit cues) and `coven-memory` (coven on the memory store,
 * nothing durable: what the engine's own work costs, the floor under each durable store's figures), for comparison.
 */
export const ON_REQUEST: readonly SystemName[] = ['coven-sqlite-polled', 'coven-memory'];
/** Systems that keep nothing across a killed process: the crash workload has nothing to measure on them. */
export const NOT_DURABLE: readonly SystemName[] = ['coven-memory'];
/** What runs without `--systems`. */
export const DEFAULT_SYSTEMS: readonly SystemName[] = SYSTEMS.filter(
  (s) => !ON_REQUEST.includes(s) && !BASELINES.includes(s),
);
export const PEERS: readonly SystemName[] = ['graphile-worker', 'bullmq', 'pg-boss'];
export const COVENS: readonly SystemName[] = [
  'coven-sqlite',
  'coven-json',
  'coven-postgres',
  'coven-sqlite-polled',
  'coven-memory',
  'coven-sqlite-baseline',
  'coven-postgres-baseline',
];

export const WORKLOADS = ['burst', 'steady', 'crash'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/** The servers a system may talk to; each child reads the CPU of the one its system uses. */
export interface Servers {
  /** postgres://… of a database made for this run alone (absent when the system uses none). */
  pgUrl?: string;
  /** The postmaster's pid: its process tree's CPU is the server's. */
  pgPid?: number;
  redisPort?: number;
  redisPid?: number;
}

/** One child's orders, passed as its single argument (JSON). */
export interface ChildSpec {
  system: SystemName;
  workload: WorkloadName;
  /** `run` measures a workload; `recover` is the crash workload's restart on what the killed child left. */
  phase: 'run' | 'recover';
  /** Jobs in a burst (burst and crash). */
  jobs: number;
  /** Jobs a worker runs at once. */
  concurrency: number;
  /** Steady arrivals per minute and for how long. */
  ratePerMinute: number;
  seconds: number;
  /** Steady arrivals before the measured window, at the same rate: answered, not measured. */
  warmUpSeconds: number;
  /** The crash workload's restart: how long the restarted system may take to finish what it can. */
  recoverSeconds: number;
  /** A directory the run may write to (the coven file stores, the crash workload's execution log). */
  dir: string;
  servers: Servers;
  /** The baseline systems: the checkout of the baseline revision (`--baseline`) whose engine they run. */
  baselineRoot?: string;
}

/** Latency summary in milliseconds. */
export interface Quantiles {
  p50: number;
  p95: number;
  samples: number;
}

export interface BurstResult {
  kind: 'burst';
  jobs: number;
  makespanMs: number;
  startMs: Quantiles;
  cpuWorkerS: number;
  cpuServerS: number;
}

export interface SteadyResult {
  kind: 'steady';
  requested: number;
  completed: number;
  startMs: Quantiles;
  completeMs: Quantiles;
  /** CPU of the worker and of the server per wall second from the first arrival to the last completion, % of a core. */
  cpuWorkerPercent: number;
  cpuServerPercent: number;
}

/** What the restarted system reports once it finished, or when its time was up. */
export interface RecoverResult {
  kind: 'recover';
  /** Jobs the system holds (accepted before the kill). */
  accepted: number;
  completed: number;
  /** Accepted but not completed when the restart's time was up (running, locked, waiting for recovery, failed). */
  unfinished: number;
  /** Seconds from the restart until every accepted job was completed, or the limit. */
  recoverS: number;
}

/** The crash workload as the driver reports it, from the recovery and the execution log. */
export interface CrashResult {
  kind: 'crash';
  accepted: number;
  executedAtKill: number;
  duplicates: number;
  neverRun: number;
  unfinished: number;
  recoverS: number;
}

export type ChildResult = BurstResult | SteadyResult | RecoverResult;
export type RunResult = BurstResult | SteadyResult | CrashResult;

/** The line a child prints last on stdout. */
export const RESULT_PREFIX = 'PEERS-RESULT ';
