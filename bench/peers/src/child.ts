// One system, one workload, in a process of its own, so its CPU is its own. Run by main.ts as
// `node --import tsx src/child.ts '<ChildSpec JSON>'`; prints RESULT_PREFIX + the result JSON last on stdout.
import { setTimeout as sleep } from 'node:timers/promises';
import { ownCpuSeconds, serversCpuSeconds } from './proc-cpu.js';
import {
  RESULT_PREFIX,
  type BurstResult,
  type ChildResult,
  type ChildSpec,
  type RecoverResult,
  type SteadyResult,
} from './protocol.js';
import { quantiles } from './stats.js';
import { openSystem } from './systems/index.js';
import { now, type JobHooks, type SystemUnderTest } from './systems/system.js';

/** Idle time between starting the workers and the measured window, so start-up work is not measured. */
const SETTLE_MS = 1_000;
/** How long the last jobs may take to complete after the arrivals end before the run fails. */
const DRAIN_LIMIT_MS = 120_000;
/** Steady arrivals take definitions (coven) in turn: enough that each one's last run settled before its next. */
const STEADY_SLOTS = 200;
/** How often a system's completion records are counted while waiting for the last (one cheap query). */
const RECORDED_POLL_MS = 100;

/** Starts and completions as they happen, by job key. */
class Tracker implements JobHooks {
  readonly startedAt = new Map<string, number>();
  readonly completedAt = new Map<string, number>();
  private waiter: (() => void) | undefined;
  private target = Infinity;
  started(key: string): void {
    if (!this.startedAt.has(key)) this.startedAt.set(key, now());
  }
  completed(key: string): void {
    if (this.completedAt.has(key)) return;
    this.completedAt.set(key, now());
    if (this.completedAt.size >= this.target) this.waiter?.();
  }
  /** Resolves once `count` jobs completed (per the hooks), or rejects after `limitMs`. */
  async allCompleted(count: number, limitMs: number): Promise<void> {
    if (this.completedAt.size >= count) return;
    this.target = count;
    const done = new Promise<void>((resolve) => (this.waiter = resolve));
    const limit = sleep(limitMs).then(() => {
      throw new Error(`only ${this.completedAt.size} of ${count} jobs completed within ${limitMs} ms`);
    });
    await Promise.race([done, limit]);
  }
}

/** Completion instants: the hooks', or the system's own records where it keeps them (polled until all are there). */
async function completions(system: SystemUnderTest, tracker: Tracker, keys: string[]): Promise<Map<string, number>> {
  if (system.recorded === undefined) {
    await tracker.allCompleted(keys.length, DRAIN_LIMIT_MS);
    return tracker.completedAt;
  }
  const limit = performance.now() + DRAIN_LIMIT_MS;
  for (;;) {
    const count = await system.recorded.count();
    if (count >= keys.length) return system.recorded.times();
    if (performance.now() > limit) throw new Error(`only ${count} of ${keys.length} jobs completed in time`);
    await sleep(RECORDED_POLL_MS);
  }
}

function serverPids(spec: ChildSpec): Array<number | undefined> {
  return [spec.servers.pgUrl === undefined ? undefined : spec.servers.pgPid, spec.servers.redisPid];
}

async function burst(spec: ChildSpec, system: SystemUnderTest, tracker: Tracker): Promise<BurstResult> {
  const ids = Array.from({ length: spec.jobs }, (_, i) => i);
  const cpu0 = ownCpuSeconds();
  const server0 = serversCpuSeconds(serverPids(spec));
  const t0 = now();
  const keys = await system.submitBurst(ids);
  const done = await completions(system, tracker, keys);
  const cpuWorkerS = ownCpuSeconds() - cpu0;
  const cpuServerS = serversCpuSeconds(serverPids(spec)) - server0;
  const starts = keys.map((k) => tracker.startedAt.get(k)! - t0);
  return {
    kind: 'burst',
    jobs: keys.length,
    makespanMs: Math.max(...keys.map((k) => done.get(k)!)) - t0,
    startMs: quantiles(starts),
    cpuWorkerS,
    cpuServerS,
  };
}

/**
 * Sends `count` requests open loop, `interval` ms apart from `begin`, whether or not earlier ones were answered (as
 * clients' would), numbered from `first`; `keys[i]` is request i's job key once accepted, `due[i]` when it left.
 */
async function arrivals(system: SystemUnderTest, first: number, count: number, begin: number, interval: number) {
  const due: number[] = [];
  const keys: Array<string | undefined> = [];
  const sent: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    due[i] = begin + i * interval;
    const wait = due[i]! - now();
    if (wait > 1) await sleep(wait);
    sent.push(system.submitOne(first + i).then((key) => void (keys[i] = key)));
  }
  return { due, keys, sent: Promise.all(sent) };
}

async function steady(spec: ChildSpec, system: SystemUnderTest, tracker: Tracker): Promise<SteadyResult> {
  const total = Math.round((spec.ratePerMinute / 60) * spec.seconds);
  const interval = 60_000 / spec.ratePerMinute;
  // A steady state is what follows a fresh process's first requests (its JIT, caches, pools): the same arrivals
  // go first for every system, answered and not measured, and the measured ones follow on the same schedule.
  const warmUpCount = Math.round((spec.ratePerMinute / 60) * spec.warmUpSeconds);
  const warmUp = await arrivals(system, 0, warmUpCount, now(), interval);
  const begin = warmUp.due.length === 0 ? now() : warmUp.due.at(-1)! + interval;
  const cpu0 = ownCpuSeconds();
  const server0 = serversCpuSeconds(serverPids(spec));
  const { due, keys, sent } = await arrivals(system, warmUpCount, total, begin, interval);
  await Promise.all([warmUp.sent, sent]);
  const accepted = keys.flatMap((k, i) => (k === undefined ? [] : [{ key: k, due: due[i]! }]));
  // Every accepted request is waited for (a system's completion count covers the warm-up's too); the measured ones
  // are timed.
  const warmedKeys = warmUp.keys.filter((k): k is string => k !== undefined);
  const done = await completions(system, tracker, [...warmedKeys, ...accepted.map((a) => a.key)]);
  const wallS = (now() - begin) / 1000;
  const cpuWorkerS = ownCpuSeconds() - cpu0;
  const cpuServerS = serversCpuSeconds(serverPids(spec)) - server0;
  return {
    kind: 'steady',
    requested: total,
    completed: accepted.length,
    startMs: quantiles(accepted.map((a) => tracker.startedAt.get(a.key)! - a.due)),
    completeMs: quantiles(accepted.map((a) => done.get(a.key)! - a.due)),
    cpuWorkerPercent: (cpuWorkerS / wallS) * 100,
    cpuServerPercent: (cpuServerS / wallS) * 100,
  };
}

/** The crash workload's first life: submit the burst and work until the driver kills this process. */
async function crashRun(spec: ChildSpec, system: SystemUnderTest): Promise<never> {
  await system.submitBurst(Array.from({ length: spec.jobs }, (_, i) => i));
  await sleep(DRAIN_LIMIT_MS);
  throw new Error('the crash run was not killed: every job finished before the driver saw half of them run');
}

/** The crash workload's restart: work on whatever the killed process left until all is done or time is up. */
async function recover(spec: ChildSpec, system: SystemUnderTest): Promise<RecoverResult> {
  const begin = performance.now();
  const limit = begin + spec.recoverSeconds * 1000;
  for (;;) {
    const held = await system.held(spec.jobs);
    const finished = held.completed >= held.accepted;
    if (finished || performance.now() > limit)
      return {
        kind: 'recover',
        ...held,
        unfinished: held.accepted - held.completed,
        recoverS: (performance.now() - begin) / 1000,
      };
    await sleep(250);
  }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as ChildSpec;
  const system = await openSystem(spec);
  const tracker = new Tracker();
  const crash = spec.workload === 'crash';
  let result: ChildResult;
  try {
    await system.prepare(spec.workload === 'steady' ? STEADY_SLOTS : spec.jobs, spec.phase === 'run');
    await system.startWorkers(tracker, {
      concurrency: spec.concurrency,
      ...(crash ? { executionLog: `${spec.dir}/executions.log` } : {}),
    });
    if (spec.phase === 'recover') result = await recover(spec, system);
    else {
      await sleep(SETTLE_MS);
      if (crash) await crashRun(spec, system);
      result = spec.workload === 'burst' ? await burst(spec, system, tracker) : await steady(spec, system, tracker);
    }
  } finally {
    await system.stop();
  }
  process.stdout.write(`\n${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${spec()}: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);

function spec(): string {
  try {
    const s = JSON.parse(process.argv[2] ?? '{}') as Partial<ChildSpec>;
    return `${s.system} ${s.workload} ${s.phase}`;
  } catch {
    return 'child';
  }
}
