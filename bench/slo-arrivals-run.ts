// Runs the arrivals cell (bench/slo-arrivals.ts, compiled to .bench-build/) in its own process and reads its
// ArrivalsResult; shared by the SLO bench's gate table and its daemon side-by-side rounds.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { ArrivalsResult } from './slo-arrivals.js';

export interface ArrivalsRun {
  store: 'json' | 'sqlite';
  /** Requests through a daemon's Unix socket with an SSE follower (`--daemon`), else the engine in-process. */
  daemon: boolean;
  seconds: number;
  /** How long the idle daemon is watched for V8's memory reducer (undefined: the cell's default). */
  idleSettleS?: number;
  /** Where the compiled cells are. */
  buildDir: string;
}

/** One arrivals cell at the upstream gate's rate (2,000 run-now requests per minute). */
export function runArrivals(run: ArrivalsRun): ArrivalsResult {
  const started = performance.now();
  const args = [
    '--expose-gc',
    join(run.buildDir, 'bench', 'slo-arrivals.js'),
    '--store',
    run.store,
    '--rate',
    '2000',
    '--seconds',
    String(run.seconds),
    ...(run.idleSettleS === undefined ? [] : ['--idle-settle-s', String(run.idleSettleS)]),
    ...(run.daemon ? ['--daemon'] : []),
  ];
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const label = `${run.store} arrivals${run.daemon ? ' through the daemon' : ''}`;
  if (child.status !== 0) throw new Error(`${label} failed:\n${child.stderr}`);
  const result = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as ArrivalsResult;
  console.error(
    `  ${label}, ${result.requested} run-now requests over ${run.seconds} s: ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return result;
}

/** The measures a daemon under steady arrivals answers: each latency is one occurrence's own. */
export function arrivalMeasures(r: ArrivalsResult): Map<string, number> {
  return new Map<string, number>([
    ['claim.latency.p95', r.latencyMs.claim.p95],
    ['dispatch.latency.p95', r.latencyMs.dispatch.p95],
    ['start.latency.p95', r.latencyMs.start.p95],
    ['scheduler.pass.duration.p95', r.passMs.p95],
    ['queue.depth.p95', r.queueDepth.p95],
    ['oldest-eligible.age.p95', r.oldestEligibleAgeS.p95],
    ['active.runs.max', r.activeRuns.max],
    ...(r.store === 'sqlite' ? ([['sqlite.busy-retries.max', r.busyErrorsPerPassMax]] as Array<[string, number]>) : []),
    ['cpu.idle', r.cpuIdlePercent],
    ['cpu.load.p95', r.cpuLoadPercent.p95],
    ['memory.idle', r.rssIdleMb],
    ['memory.load.p95', r.rssLoadMb.p95],
  ]);
}
