// The arrivals cell: the engine as a daemon (Engine.start on the real clock) under a steady stream of
// run-now requests, so every latency is one occurrence's own, measured from its request, not a batch's.
// Run by bench/slo.ts (compiled to .bench-build/); alone: tsx bench/slo-arrivals.ts --store sqlite --rate 2000 --seconds 30
// Prints one JSON line (ArrivalsResult) last on stdout. With --daemon the requests go through a daemon's Unix
// socket (DaemonClient) while an SSE follower drains the changefeed, to measure what the daemon adds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine, type TickReport } from '../src/engine/engine.js';
import type { LaunchRequest, LaunchResult, Observation, Runtime } from '../src/runtime/runtime.js';
import { SimulatedRuntime } from '../src/runtime/simulated-runtime.js';
import { openStore, type FileStoreKind } from '../src/store/open-store.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { DaemonClient, startDaemon, type Daemon } from '../src/daemon/index.js';
import { command, definition, send } from './fixtures.js';
import { percentile } from './stats.js';

export interface ArrivalsResult {
  store: FileStoreKind;
  ratePerMinute: number;
  seconds: number;
  definitions: number;
  sessionMs: number;
  requested: number;
  /** Requests refused (e.g. OVERLAP_FORBIDDEN when a definition's previous run had not settled), by code. */
  refused: Record<string, number>;
  succeeded: number;
  /** Succeeded occurrences per minute, from the first request to the last settlement. */
  succeededPerMinute: number;
  latencyMs: Record<
    'claim' | 'dispatch' | 'start' | 'settle',
    { p50: number; p95: number; p99: number; samples: number }
  >;
  passMs: { p50: number; p95: number; p99: number; samples: number };
  /** Median of each pass phase, to see where a pass's time goes. */
  phaseP50Ms: Record<keyof TickReport['phaseMs'], number>;
  queueDepth: { p95: number; max: number };
  oldestEligibleAgeS: { p95: number; max: number };
  activeRuns: { max: number; littleBaseline: number };
  busyErrorsPerPassMax: number;
  cpuLoadPercent: { p50: number; p95: number };
  cpuIdlePercent: number;
  rssLoadMb: { p95: number; max: number };
  /** RSS once the daemon has idled until V8's memory reducer gave back what it could (or for the limit). */
  rssIdleMb: number;
  /** RSS after the CPU idle window only, a GC, and before V8 shrank its heap: what the load left resident. */
  rssAfterLoadMb: number;
  /** Seconds of idling (after the CPU window) until V8's memory reducer had run; the limit when it did not. */
  idleSettledS: number;
}

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};

/** Definitions taking the requests in turn: enough that each one's previous run settled before its next request. */
const DEFINITIONS = 200;
/** Samples of queue depth, age and active runs per second. */
const SAMPLE_MS = 100;
/** The idle window whose CPU share is `cpu.idle`: the daemon running with nothing due. */
const IDLE_MS = 5_000;
/**
 * How long an idle daemon is watched for V8's memory reducer, whose collections give back the heap a load grew;
 * they start once allocation has stayed low for a while, well after the load ends (bench/README.md has the figures;
 * one forced GC before it gives nothing back). Past the limit the RSS is taken as it is. `--idle-settle-s` sets it
 * (the quick bench: 0).
 */
const IDLE_SETTLE_LIMIT_S = 120;
/** The memory reducer runs its collections (up to three) within a second or two; this long without one, it is done. */
const REDUCER_QUIET_MS = 3_000;
/** Waiting for the last sessions to settle after the arrivals stop; beyond it the cell fails. */
const DRAIN_LIMIT_MS = 60_000;

interface Arrival {
  /** When the request was due to leave: latency counts from here, so time spent waiting for a busy process counts. */
  requestedAt: number;
  /** Set when the request was answered: a run-now answers after its launch was acknowledged. */
  occurrenceId?: string;
  answeredAt?: number;
}

/** Instants (performance.now) one occurrence reached, stamped as they happen. */
interface Stamps {
  /** The dispatcher's first commit for the occurrence: its claim (committed with the request) is behind it. */
  dispatchedAt?: number;
  /** The runtime acknowledged the launch: the session is started. */
  startedAt?: number;
  settledAt?: number;
}

/** The simulated runtime, stamping the instant each launch was acknowledged. */
class StampingRuntime implements Runtime {
  readonly runtimeId: string;
  readonly sideEffectClass;
  readonly sideEffectBoundProven;
  constructor(
    private readonly inner: SimulatedRuntime,
    private readonly onStarted: (occurrenceId: string) => void,
  ) {
    this.runtimeId = inner.runtimeId;
    this.sideEffectClass = inner.sideEffectClass;
    this.sideEffectBoundProven = inner.sideEffectBoundProven;
  }
  async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    const result = await this.inner.launch(request, now);
    if (result.outcome === 'started') this.onStarted(request.occurrenceId);
    return result;
  }
  observe(sessionId: string, now: Date): Promise<Observation> {
    return this.inner.observe(sessionId, now);
  }
  cancel(sessionId: string): Promise<void> {
    return this.inner.cancel(sessionId);
  }
}

const stats = (xs: number[]) => ({
  p50: percentile(xs, 0.5),
  p95: percentile(xs, 0.95),
  p99: percentile(xs, 0.99),
  samples: xs.length,
});
const rssMb = () => process.memoryUsage().rss / 1_048_576;
const cpuMicros = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function main(): Promise<void> {
  const kind = arg('store', 'sqlite') as FileStoreKind;
  const ratePerMinute = Number(arg('rate', '2000'));
  const seconds = Number(arg('seconds', '40'));
  const sessionMs = Number(arg('session-ms', '500'));
  const settleLimitMs = Number(arg('idle-settle-s', String(IDLE_SETTLE_LIMIT_S))) * 1000;
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-arrivals-'));
  const store = await openStore(join(dir, kind === 'sqlite' ? 'store.sqlite' : 'store.json'), kind);
  const arrivals: Arrival[] = [];
  const stamps = new Map<string, Stamps>();
  const stamp = (occurrenceId: string, field: keyof Stamps) => {
    let s = stamps.get(occurrenceId);
    if (s === undefined) stamps.set(occurrenceId, (s = {}));
    s[field] ??= performance.now();
  };
  const settled = (a: Arrival) => a.occurrenceId !== undefined && stamps.get(a.occurrenceId)?.settledAt !== undefined;
  const runtime = new StampingRuntime(new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: sessionMs }), (id) =>
    stamp(id, 'startedAt'),
  );
  const engine = createEngine({ store, runtimes: [runtime], instanceId: 'bench-arrivals' });
  let daemon: Daemon | undefined;
  const following = new AbortController();
  engine.services.observer = (transitions) => {
    for (const t of transitions) {
      // The run's creation is the dispatcher's acceptance, the first commit after the request's claim.
      if (t.entity === 'run' && t.from === 'none') stamp(t.context.occurrenceId as string, 'dispatchedAt');
      if (t.entity === 'occurrence' && t.to === 'succeeded') stamp(t.id, 'settledAt');
    }
  };
  try {
    // Due once a day, twelve hours from now: the scheduler plans nothing while the cell runs.
    const hour = (new Date().getUTCHours() + 12) % 24;
    const ids = Array.from({ length: DEFINITIONS }, (_, i) => `arrivals-${String(i).padStart(4, '0')}`);
    for (const id of ids) {
      await command(engine, 'definition.create.v1', {
        definition: definition(id, 1, 'draft', `FREQ=DAILY;BYHOUR=${hour}`),
      });
      await command(
        engine,
        'definition.revise.v1',
        { definition: definition(id, 2, 'paused', `FREQ=DAILY;BYHOUR=${hour}`) },
        1,
      );
      await command(engine, 'definition.activate.v1', { automationId: id }, 2);
    }

    let target = engine;
    if (process.argv.includes('--daemon')) {
      daemon = await startDaemon({ engine, store, storeFile: store.file });
      const client = new DaemonClient({ socketPath: daemon.socketPath });
      // send() needs only `commands.handle`, which the client answers the same way over the socket.
      target = { commands: client } as unknown as typeof engine;
      void (async () => {
        for await (const _ of client.events({ after: -1, signal: following.signal }));
      })();
    }
    const passes: number[] = [];
    const phases: Record<keyof TickReport['phaseMs'], number[]> = {
      plan: [],
      advance: [],
      dispatch: [],
      observe: [],
      retention: [],
      checkpoint: [],
    };
    const busyPerPass: number[] = [];
    let busySeen = 0;
    engine.start((report: TickReport) => {
      passes.push(
        report.phaseMs.plan +
          report.phaseMs.advance +
          report.phaseMs.dispatch +
          report.phaseMs.observe +
          report.phaseMs.retention +
          report.phaseMs.checkpoint,
      );
      for (const phase of Object.keys(phases) as Array<keyof typeof phases>) phases[phase].push(report.phaseMs[phase]);
      const busy = store instanceof SqliteStore ? store.busyErrors : 0;
      busyPerPass.push(busy - busySeen);
      busySeen = busy;
    });

    const total = Math.round((ratePerMinute / 60) * seconds);
    const interval = 60_000 / ratePerMinute;
    // Unset until the first request is sent; the sampler below runs before that and must see it unset.
    let begin: number | undefined = undefined;
    // Samplers: queue and runs every SAMPLE_MS, CPU and RSS every second.
    const depth: number[] = [];
    const age: number[] = [];
    let activeMax = 0;
    const sampler = setInterval(() => {
      const now = performance.now();
      // Requests whose time has come but which were not sent yet (the process was busy) are waiting too.
      const dueByNow = begin === undefined ? 0 : Math.min(total, Math.floor((now - begin) / interval) + 1);
      let waiting = Math.max(0, dueByNow - arrivals.length);
      let oldest = waiting > 0 && begin !== undefined ? now - (begin + arrivals.length * interval) : 0;
      let active = 0;
      for (const a of arrivals) {
        if (a.answeredAt === undefined) {
          waiting++;
          oldest = Math.max(oldest, now - a.requestedAt);
        } else if (a.occurrenceId !== undefined && !settled(a)) active++;
      }
      depth.push(waiting);
      age.push(oldest / 1000);
      activeMax = Math.max(activeMax, active);
    }, SAMPLE_MS);
    const cpuLoad: number[] = [];
    const rssLoad: number[] = [];
    let cpuMark = cpuMicros();
    let wallMark = performance.now();
    const cpuSampler = setInterval(() => {
      const cpu = cpuMicros();
      const wall = performance.now();
      cpuLoad.push(((cpu - cpuMark) / 1000 / (wall - wallMark)) * 100);
      rssLoad.push(rssMb());
      cpuMark = cpu;
      wallMark = wall;
    }, 1000);

    // Open loop: requests leave on schedule whether or not earlier ones were answered, as clients' would.
    const refused: Record<string, number> = {};
    begin = performance.now();
    const answers: Array<Promise<void>> = [];
    for (let i = 0; i < total; i++) {
      const due = begin + i * interval;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const arrival: Arrival = { requestedAt: due };
      arrivals.push(arrival);
      answers.push(
        send(target, 'occurrence.runNow.v1', { automationId: ids[i % ids.length]! }).then((response) => {
          arrival.answeredAt = performance.now();
          if (response.outcome === 'rejected') refused[response.error!.code] = (refused[response.error!.code] ?? 0) + 1;
          else arrival.occurrenceId = (response.result as { occurrenceId: string }).occurrenceId;
        }),
      );
    }
    await Promise.all(answers);
    const drainLimit = performance.now() + DRAIN_LIMIT_MS;
    while (arrivals.some((a) => a.occurrenceId !== undefined && !settled(a))) {
      if (performance.now() > drainLimit) throw new Error('sessions did not settle within the drain limit');
      await sleep(50);
    }
    const done = arrivals.filter(settled).map(
      (a) =>
        ({ requestedAt: a.requestedAt, ...stamps.get(a.occurrenceId!)! }) as Required<Stamps> & {
          requestedAt: number;
        },
    );
    const end = Math.max(...done.map((a) => a.settledAt));
    clearInterval(sampler);
    clearInterval(cpuSampler);

    // Idle: the daemon keeps running with nothing due; its CPU share over the window, then RSS after a collection.
    const idleCpu = cpuMicros();
    const idleWall = performance.now();
    await sleep(IDLE_MS);
    const cpuIdlePercent = ((cpuMicros() - idleCpu) / 1000 / (performance.now() - idleWall)) * 100;
    (globalThis as { gc?: () => void }).gc?.();
    const rssAfterLoadMb = rssMb();
    const settleStart = performance.now();
    // With nothing due the daemon allocates next to nothing, so a full collection now is the memory reducer's.
    let reducedAt: number | undefined;
    const collections = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if (
          entry.startTime > settleStart &&
          (entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR
        )
          reducedAt = entry.startTime + entry.duration;
      }
    });
    collections.observe({ entryTypes: ['gc'] });
    while (
      performance.now() - settleStart < settleLimitMs &&
      (reducedAt === undefined || performance.now() - reducedAt < REDUCER_QUIET_MS)
    )
      await sleep(1000);
    collections.disconnect();
    const idleSettledS = (performance.now() - settleStart) / 1000;
    // No second forced GC: back to back, two give the heap back at once, which no daemon does by itself.
    const rssIdleMb = rssMb();

    const result: ArrivalsResult = {
      store: kind,
      ratePerMinute,
      seconds,
      definitions: DEFINITIONS,
      sessionMs,
      requested: arrivals.length,
      refused,
      succeeded: done.length,
      succeededPerMinute: done.length / ((end - begin!) / 60_000),
      latencyMs: {
        claim: stats(done.map((a) => a.dispatchedAt - a.requestedAt)),
        dispatch: stats(done.map((a) => a.startedAt - a.dispatchedAt)),
        start: stats(done.map((a) => a.startedAt - a.requestedAt)),
        settle: stats(done.map((a) => a.settledAt - a.requestedAt)),
      },
      passMs: stats(passes),
      phaseP50Ms: Object.fromEntries(
        Object.entries(phases).map(([phase, ms]) => [phase, percentile(ms, 0.5)]),
      ) as ArrivalsResult['phaseP50Ms'],
      queueDepth: { p95: percentile(depth, 0.95), max: Math.max(...depth) },
      oldestEligibleAgeS: { p95: percentile(age, 0.95), max: Math.max(...age) },
      // Little's law: arrivals per ms × session length is what any engine would hold running.
      activeRuns: { max: activeMax, littleBaseline: (ratePerMinute / 60_000) * sessionMs },
      busyErrorsPerPassMax: Math.max(0, ...busyPerPass),
      cpuLoadPercent: { p50: percentile(cpuLoad, 0.5), p95: percentile(cpuLoad, 0.95) },
      cpuIdlePercent,
      rssLoadMb: { p95: percentile(rssLoad, 0.95), max: Math.max(...rssLoad) },
      rssIdleMb,
      rssAfterLoadMb,
      idleSettledS,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    following.abort();
    await daemon?.close();
    await engine.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
