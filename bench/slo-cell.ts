// One bench cell: one store kind at one history size, in its own process so RSS belongs to this cell alone.
// Run by bench/slo.ts (compiled to .bench-build/); alone: tsx bench/slo-cell.ts --store sqlite --history 10000 --definitions 1000
// Prints one JSON line (CellResult) last on stdout.
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine, type Engine, type TickReport } from '../src/engine/engine.js';
import { nextWakeAt } from '../src/engine/next-wake.js';
import { SimulatedClock } from '../src/clock/clock.js';
import type { CommittedTransition } from '../src/domain/inspection.js';
import { SimulatedRuntime } from '../src/runtime/simulated-runtime.js';
import type { Store } from '../src/store/store.js';
import { command, definition } from './fixtures.js';
import { cloneHistory } from './history.js';
import { percentile } from './stats.js';
import { cellStore, type CellStore, type CellStoreKind } from './slo-store.js';

export interface CellResult {
  store: CellStoreKind;
  history: number;
  definitions: number;
  definitionsPerMinute: number;
  dueOccurrencesPerMinute: number;
  measuredOccurrences: number;
  /** Wall time of the measured hours; commits and transitions are counted over it. */
  measuredMs: number;
  commits: number;
  /** Retention window of the cell (hours; 0 = none) and the unmeasured hours run first to fill it. */
  retentionHours: number;
  warmupHours: number;
  /** Occurrences retention compacted during the measured hours. */
  compacted: number;
  /** Bytes the measured hours added, divided by their commits: what the fsync floor appends per commit. */
  bytesPerCommit: number;
  /** Each pass phase's wall time, p50/p95/p99 over the passes where that phase had work (a batch of N). */
  phases: Record<'plan' | 'claim' | 'dispatch' | 'start' | 'pass', Stats>;
  /** Each measured burst's plan phase in order: the first is the reopened engine's first pass (cold directory and caches). */
  planPhaseMs: number[];
  /**
   * Each measured occurrence's own latency, timed at the commits the engine reported: plan = due (its pass
   * began) → planned; claim = planned → claimed; dispatch = claimed → running (the runtime acknowledged);
   * start = due → running.
   */
  occurrenceLatencyMs: Record<'plan' | 'claim' | 'dispatch' | 'start', Stats>;
  changefeedEventsPerSecond: number;
  changefeedEvents: number;
  replayP95Ms: number;
  recoveryMs: number[];
  storeBytes: number;
  bytesPerOccurrence: number;
  /** A fresh daemon process at rest on this cell's store (bench/slo-idle.ts): what `memory.idle` reports. */
  rssIdleMb: number;
  /** The same idle moment inside the cell's process, which also holds the harness and its heap's high-water mark. */
  rssInCellIdleMb: number;
  /** Median of {@link IDLE_LOOPS} daemon loops (pass + wake-up computation) with nothing due. */
  idleLoopMs: number;
  rssLoadedMb: number;
  seedMs: number;
  transitions: CommittedTransition[];
}

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};

const START = '2026-03-02T00:30:00.000Z';
const HOUR = 3_600_000;
/** Measured hours after the history is seeded (--hours): enough passes for percentiles without a long run. */
const DEFAULT_MEASURED_HOURS = 3;
/** A tick per simulated minute; a slot completes within a few (plan, claim, dispatch, observe after 1 min). */
const MAX_TICKS_PER_HOUR = 12;
/** Historical occurrences whose changefeed events are cloned too; beyond it only records (seeding time). */
const EVENT_HISTORY = 10_000;

/** Every hour, in the daily form v1 executes (FREQ=HOURLY is outside the contract's v1 profile). */
const HOURLY = `FREQ=DAILY;BYHOUR=${Array.from({ length: 24 }, (_, h) => h).join(',')}`;

/** Loops timed for the idle-loop figure; the median is reported. */
const IDLE_LOOPS = 7;

const rssMb = () => process.memoryUsage().rss / 1_048_576;
type Stats = { p50: number; p95: number; p99: number; samples: number };
const stats = (xs: number[]): Stats => ({
  p50: percentile(xs, 0.5),
  p95: percentile(xs, 0.95),
  p99: percentile(xs, 0.99),
  samples: xs.length,
});

/** Commit instants (performance.now()) of one occurrence's milestones, from the engine's committed transitions. */
interface Milestones {
  due?: number;
  planned?: number;
  claimed?: number;
  running?: number;
}

function occurrenceLatencies(milestones: Map<string, Milestones>): CellResult['occurrenceLatencyMs'] {
  const plan: number[] = [];
  const claim: number[] = [];
  const dispatch: number[] = [];
  const start: number[] = [];
  for (const m of milestones.values()) {
    if (m.due === undefined || m.planned === undefined || m.claimed === undefined || m.running === undefined) continue;
    plan.push(m.planned - m.due);
    claim.push(m.claimed - m.planned);
    dispatch.push(m.running - m.claimed);
    start.push(m.running - m.due);
  }
  return { plan: stats(plan), claim: stats(claim), dispatch: stats(dispatch), start: stats(start) };
}

let reads = 0;

/** RSS of a new process that opens the store, runs idle passes and collects garbage (bench/slo-idle.ts). */
function idleDaemonRssMb(kind: CellStoreKind, file: string, at: string, retentionHours: number): number {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'slo-idle.js');
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', script, '--store', kind, '--file', file, '--at', at, '--retention-hours', String(retentionHours)],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`idle daemon failed:\n${child.stderr}`);
  return (JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { rssIdleMb: number }).rssIdleMb;
}

async function main(): Promise<void> {
  const kind = arg('store', 'sqlite') as CellStoreKind;
  const history = Number(arg('history', '1000'));
  const count = Number(arg('definitions', '1000'));
  const where: CellStore = await cellStore(kind);
  const clock = new SimulatedClock(START);
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
  const transitions: CommittedTransition[] = [];
  let store: Store = await where.open();
  let ids = 0;
  // --concurrency N overrides the engine's pass concurrency, and planning's with it (default: the engine's own).
  const concurrency = arg('concurrency', '');
  // --retention-hours R: settled history of the definitions' class (standard) is compacted R hours after it
  // settled; --warmup-hours lets the window fill first, so the measured hours show the steady state.
  const retentionHours = Number(arg('retention-hours', '0'));
  const warmupHours = Number(arg('warmup-hours', '0'));
  const retention =
    retentionHours > 0 ? { windowDays: { standard: retentionHours / 24 }, sweepEveryMinutes: 0 } : false;
  const engineOn = (s: Store) =>
    createEngine({
      store: s,
      clock,
      runtimes: [runtime],
      instanceId: 'bench-engine',
      newId: () => `bench-${++ids}`,
      ...(concurrency === '' ? {} : { passConcurrency: Number(concurrency) }),
      retention,
    });
  let engine = engineOn(store);
  try {
    // definitions/min: create (draft), revise to paused, activate: the whole path to becoming schedulable.
    const defStart = performance.now();
    for (let i = 0; i < count; i++) {
      const id = `bench-${String(i).padStart(6, '0')}`;
      await command(engine, 'definition.create.v1', { definition: definition(id, 1, 'draft', HOURLY) });
      await command(engine, 'definition.revise.v1', { definition: definition(id, 2, 'paused', HOURLY) }, 1);
      await command(engine, 'definition.activate.v1', { automationId: id }, 2);
    }
    const definitionsPerMinute = count / ((performance.now() - defStart) / 60_000);

    // The first hour runs through the engine and is the template the synthetic history is cloned from.
    // --hours 0 is the restart-only cell: definitions, no executions, then the restart figures.
    const hours = Number(arg('hours', String(DEFAULT_MEASURED_HOURS)));
    let hour = Date.parse('2026-03-02T01:00:00.000Z');
    if (hours > 0)
      await runHour(
        engine,
        clock,
        hour,
        () => undefined,
        () => undefined,
      );
    // Before the first slot: recovery itself, not a catch-up pass planning every definition's missed slot.
    else clock.set(new Date(hour - 15 * 60_000));
    const seedStart = performance.now();
    if (history > 0)
      await cloneHistory(store, {
        automationCount: count,
        templateSlot: hour,
        occurrences: history,
        copiesWithEvents: Math.ceil(EVENT_HISTORY / count),
      });
    const seedMs = performance.now() - seedStart;
    for (let h = 0; h < warmupHours; h++) {
      hour += HOUR;
      await runHour(
        engine,
        clock,
        hour,
        () => undefined,
        () => undefined,
      );
    }
    // Reopen so the growth figure starts from a checkpointed file (SQLite folds its WAL back on close).
    await engine.stop();
    await store.close();
    store = await where.open();
    const bytesBefore = await where.bytes();

    // Measured hours: passes timed by phase, commits counted, transitions recorded for the XState baseline.
    const samples = {
      plan: [] as number[],
      claim: [] as number[],
      dispatch: [] as number[],
      start: [] as number[],
      pass: [] as number[],
    };
    let commits = 0;
    const countCommits = store.onCommit(() => void commits++);
    engine = engineOn(store);
    // Each observer call follows the commit of the step that made the transitions: its instant is theirs.
    const milestones = new Map<string, Milestones>();
    let passStartedAt = 0;
    engine.services.observer = (t) => {
      transitions.push(...t);
      const at = performance.now();
      for (const x of t) {
        if (x.entity !== 'occurrence') continue;
        if (x.from === 'none') milestones.set(x.id, { due: passStartedAt, planned: at });
        const m = milestones.get(x.id);
        if (m === undefined) continue;
        if (x.to === 'claimed') m.claimed ??= at;
        else if (x.to === 'running') m.running ??= at;
      }
    };
    // The daemon is running before the first measured burst, as one started ahead of its schedule is: one
    // pass a minute before it, with nothing due, fills the engine's directory of definitions and plan
    // cursors. (Until 2026-12-01 the first measured burst was also the reopened engine's first pass, which
    // set planning.latency.p95; a restart's first pass is what restart.recovery-latency measures.)
    // (The restart-only cell, --hours 0, measures no hours: its clock stays before the first slot.)
    if (hours > 0) {
      clock.set(new Date(hour + HOUR - 60_000));
      const warmup = await engine.tick();
      if (warmup.planned + warmup.launched + warmup.settled > 0)
        throw new Error('the pass before the measured hours found work');
    }
    let rssLoadedMb = rssMb();
    // --cpu-profile FILE: a V8 CPU profile of the measured hours alone (node --cpu-prof covers seeding too).
    const profile = arg('cpu-profile', '');
    const profiler = profile === '' ? undefined : await startProfiler();
    const measureStart = performance.now();
    let measured = 0;
    let compacted = 0;
    for (let h = 0; h < hours; h++) {
      hour += HOUR;
      measured += await runHour(
        engine,
        clock,
        hour,
        (startedAt) => void (passStartedAt = startedAt),
        (r) => {
          compacted += r.compacted;
          const start = r.phaseMs.plan + r.phaseMs.advance + r.phaseMs.dispatch;
          if (r.planned > 0) samples.plan.push(r.phaseMs.plan);
          if (r.launched > 0) {
            samples.claim.push(r.phaseMs.advance);
            samples.dispatch.push(r.phaseMs.dispatch);
            samples.start.push(start);
          }
          samples.pass.push(start + r.phaseMs.observe + r.phaseMs.retention + r.phaseMs.checkpoint);
          rssLoadedMb = Math.max(rssLoadedMb, rssMb());
        },
      );
    }
    const measuredMs = performance.now() - measureStart;
    if (profiler !== undefined) await stopProfiler(profiler, profile);
    const occurrenceLatencyMs = occurrenceLatencies(milestones);
    const dueOccurrencesPerMinute = measured / (measuredMs / 60_000);
    countCommits();
    let grownBytes = Number.NaN;

    // Changefeed: the whole feed through events.read pages, then p95 of replaying a page from a checkpoint.
    const feedStart = performance.now();
    let events = 0;
    let after: number | undefined;
    const replay: number[] = [];
    for (;;) {
      const pageStart = performance.now();
      const response = await engine.commands.handle({
        schemaVersion: 'coven.automations.v1',
        command: 'events.read.v1',
        adoptionKey: `bench-read-${++reads}`,
        origin: { principal: { principalId: 'principal:bench' }, channel: 'cli' },
        intent: { statement: 'bench' },
        payload: { stream: { kind: 'feed', id: 'all' }, limit: 500, ...(after === undefined ? {} : { after }) },
      });
      replay.push(performance.now() - pageStart);
      const result = response.result as { events: unknown[]; nextAfter: number | null } | undefined;
      if (result === undefined || result.events.length === 0) break;
      events += result.events.length;
      if (result.nextAfter === null || result.nextAfter === after) break;
      after = result.nextAfter;
    }
    const changefeedEventsPerSecond = events / ((performance.now() - feedStart) / 1000);

    // Restart recovery: close, reopen the store, first pass of a new engine (which re-observes leases) done.
    const recoveryMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      await engine.stop();
      await store.close();
      if (i === 0) grownBytes = (await where.bytes()) - bytesBefore;
      const t0 = performance.now();
      store = await where.open();
      engine = engineOn(store);
      await engine.tick();
      recoveryMs.push(performance.now() - t0);
    }
    // Idle: after the restarts, a pass with nothing due and a full collection (as a long-lived daemon settles).
    if (hours > 0) {
      clock.advance({ minutes: 20 });
      await engine.tick();
    }
    // A daemon's loop with nothing due: a pass, then the wake-up computation (what an idle daemon repeats).
    const idleLoops: number[] = [];
    for (let i = 0; i < IDLE_LOOPS; i++) {
      const t0 = performance.now();
      const report = await engine.tick();
      if (report.planned + report.launched + report.settled > 0) throw new Error('the idle loop found work');
      await store.read((r) => nextWakeAt(engine.services, r));
      idleLoops.push(performance.now() - t0);
    }
    (globalThis as { gc?: () => void }).gc?.();
    const rssInCellIdleMb = rssMb();
    await engine.stop();
    await store.close();
    const rssIdleMb = idleDaemonRssMb(kind, where.location, clock.now().toISOString(), retentionHours);
    const result: CellResult = {
      store: kind,
      history,
      definitions: count,
      retentionHours,
      warmupHours,
      compacted,
      definitionsPerMinute,
      dueOccurrencesPerMinute,
      measuredOccurrences: measured,
      measuredMs,
      commits,
      bytesPerCommit: grownBytes / Math.max(1, commits),
      planPhaseMs: samples.plan,
      phases: {
        plan: stats(samples.plan),
        claim: stats(samples.claim),
        dispatch: stats(samples.dispatch),
        start: stats(samples.start),
        pass: stats(samples.pass),
      },
      occurrenceLatencyMs,
      changefeedEventsPerSecond,
      changefeedEvents: events,
      replayP95Ms: percentile(replay, 0.95),
      recoveryMs,
      storeBytes: await where.bytes(),
      bytesPerOccurrence: grownBytes / Math.max(1, measured),
      rssIdleMb,
      rssInCellIdleMb,
      rssLoadedMb,
      idleLoopMs: percentile(idleLoops, 0.5),
      seedMs,
      transitions: transitions.slice(0, 20_000),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await engine.stop();
    await store.close();
    await where.dispose();
  }
}

async function startProfiler(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return session;
}

async function stopProfiler(session: Session, file: string): Promise<void> {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(file, JSON.stringify(profile));
  session.disconnect();
}

/** Ticks through one hourly slot until every definition's occurrence for it settled; returns how many did. */
async function runHour(
  engine: Engine,
  clock: SimulatedClock,
  slot: number,
  beforePass: (startedAt: number) => void,
  onPass: (report: TickReport) => void,
): Promise<number> {
  clock.set(new Date(slot));
  let settled = 0;
  for (let i = 0; i < MAX_TICKS_PER_HOUR; i++) {
    beforePass(performance.now());
    const report = await engine.tick();
    if (report.errors.length > 0)
      throw new Error(`pass at ${report.at}: ${report.errors.map((e) => e.message).join('; ')}`);
    onPass(report);
    settled += report.settled;
    clock.advance({ minutes: 1 });
    if (i > 0 && report.planned === 0 && report.launched === 0 && report.settled === 0 && report.compacted === 0) break;
  }
  return settled;
}

await main();
