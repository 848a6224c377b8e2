import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { OccurrenceState, RunState } from '../../machines/index.js';
import { OCCURRENCE_STATES, RUN_STATES } from '../../machines/index.js';
import type { Clock } from '../clock/clock.js';
import type { Engine, TickReport } from '../engine/engine.js';
import { KINDS, stateOf, type RunRecord } from '../domain/records.js';
import type { Store } from '../store/store.js';
import { heldRuns } from './doctor-view.js';
import { flowReport } from '../domain/flow-report.js';
import { flowGateGauges, setFlowGates } from './flow-metrics.js';
import { attemptOutcomes, heldRunGauges, setHeldRuns } from './failure-metrics.js';
import { PassFacts, passDurationMs, type PassFactsSnapshot } from './pass-facts.js';
import { StepLatencies, type Step } from './step-latencies.js';

/** Around upstream's pass gate (p95 ≤ 1 s). */
const PASS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Around upstream's step gates (plan 250 ms, claim 100 ms, dispatch 500 ms, start 1 s), and misfires beyond. */
const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];
/** A durable commit is an fsync or two: sub-millisecond on tmpfs, tens of milliseconds on a slow disk. */
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const WAITING = new Set<string>([OccurrenceState.planned, OccurrenceState.eligible]);
const ACTIVE_RUN = new Set<string>([RunState.accepted, RunState.running]);

export interface EngineMetricsOptions {
  engine: Engine;
  /** The store the engine commits to (its commits are counted and timed); default the engine's. */
  store?: Store;
  /** The clock ages are measured on (default the engine's). */
  clock?: Clock;
  /** Node process metrics (process_*, nodejs_*) in the same registry (default true). */
  processMetrics?: boolean;
}

/** The engine's Prometheus metrics on their own registry. */
export interface EngineMetrics {
  readonly registry: Registry;
  /** Records one pass (hand it the engine's onPass reports). */
  observePass(report: TickReport): void;
  /** The scrape: store-derived gauges are read now, the changefeed's new transitions measured first. */
  text(): Promise<string>;
  /** The Prometheus text format's content type, for a scrape endpoint. */
  readonly contentType: string;
  /** What the passes seen so far say of the scheduler (the doctor's scheduler facts). */
  passes(): PassFactsSnapshot;
  /** Stops counting commits and restores the store's transact. */
  dispose(): void;
}

function passInstruments(registers: Registry[]) {
  return {
    duration: new Histogram({
      name: 'coven_scheduler_pass_duration_seconds',
      help: 'Wall time of one scheduler pass (upstream scheduler.pass.duration)',
      buckets: PASS_BUCKETS,
      registers,
    }),
    phase: new Histogram({
      name: 'coven_scheduler_pass_phase_duration_seconds',
      help: 'Wall time of one phase of a scheduler pass',
      labelNames: ['phase'],
      buckets: PASS_BUCKETS,
      registers,
    }),
    passes: new Counter({
      name: 'coven_scheduler_passes_total',
      help: 'Scheduler passes, by whether every step succeeded',
      labelNames: ['outcome'],
      registers,
    }),
    stepErrors: new Counter({
      name: 'coven_scheduler_pass_step_errors_total',
      help: 'Steps that failed (and rolled back alone) inside passes',
      registers,
    }),
    lastPass: new Gauge({
      name: 'coven_scheduler_last_pass_timestamp_seconds',
      help: 'Engine-clock time of the last pass',
      registers,
    }),
    planned: new Counter({ name: 'coven_occurrences_planned_total', help: 'Occurrences planned', registers }),
    launches: new Counter({
      name: 'coven_launches_total',
      help: 'Launches passes handed to a runtime, by its answer (run-now and recover launch inside their command)',
      labelNames: ['outcome'],
      registers,
    }),
    settled: new Counter({ name: 'coven_runs_settled_total', help: 'Sessions the worker settled', registers }),
    compacted: new Counter({
      name: 'coven_history_compacted_total',
      help: 'Settled occurrences whose history retention compacted',
      registers,
    }),
  };
}

function latencyHistograms(registers: Registry[]): Record<Step, Histogram> {
  const make = (step: Step, gate: string) =>
    new Histogram({
      name: `coven_occurrence_${step}_latency_seconds`,
      help: `From an occurrence's due time to its ${step} step, first fence only (upstream ${gate})`,
      buckets: LATENCY_BUCKETS,
      registers,
    });
  return {
    plan: make('plan', 'planning.latency'),
    claim: make('claim', 'claim.latency'),
    dispatch: make('dispatch', 'dispatch.latency'),
    start: make('start', 'start.latency'),
  };
}

function storeGauges(registers: Registry[], collect: () => Promise<void>) {
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers, collect });
  return {
    queueDepth: gauge('coven_queue_depth_occurrences', 'Occurrences due and not yet claimed (upstream queue.depth)'),
    oldestEligible: gauge(
      'coven_oldest_eligible_age_seconds',
      'Age of the oldest due, unclaimed occurrence since its due time (upstream oldest-eligible.age); 0 when none',
    ),
    activeRuns: gauge('coven_active_runs', 'Runs accepted or running (upstream active.runs)'),
    occurrences: gauge('coven_occurrences', 'Occurrences the store holds, by state', ['state']),
    runs: gauge('coven_runs', 'Runs the store holds, by state', ['state']),
    ...heldRunGauges(registers, collect),
    flow: flowGateGauges(registers, collect),
  };
}

type StoreGauges = ReturnType<typeof storeGauges>;

/**
 * The store gauges from its indexes: counts by state from the timelines, the queue from the live work, holds from
 * the run-hold records, the flow gates from their records. A scrape never reads the occurrences or runs whole.
 */
async function readStoreGauges(store: Store, clock: Clock, gauges: StoreGauges): Promise<void> {
  const now = clock.now().getTime();
  let depth = 0;
  let oldestDue = Infinity;
  const holds: { since: string | null }[] = [];
  const { occurrences, runs, flow } = await store.read(async (reader) => {
    for (const work of await reader.liveWork('occurrence')) {
      const due = Date.parse(work.scheduledFor ?? '');
      if (WAITING.has(work.state) && due <= now) {
        depth += 1;
        oldestDue = Math.min(oldestDue, due);
      }
    }
    for (const [runId, hold] of await heldRuns(reader)) {
      const run = await reader.get<RunRecord['data']>(KINDS.run, runId);
      if (run !== undefined && stateOf(run as RunRecord) === RunState.running) holds.push(hold);
    }
    return {
      occurrences: await reader.timelineCounts('occurrence', {}),
      runs: await reader.timelineCounts('run', {}),
      flow: await flowReport(reader, now),
    };
  });
  gauges.queueDepth.set(depth);
  gauges.oldestEligible.set(depth === 0 ? 0 : Math.max(0, now - oldestDue) / 1000);
  gauges.activeRuns.set([...ACTIVE_RUN].reduce((sum, s) => sum + (runs[s] ?? 0), 0));
  for (const state of OCCURRENCE_STATES) gauges.occurrences.set({ state }, occurrences[state] ?? 0);
  for (const state of RUN_STATES) gauges.runs.set({ state }, runs[state] ?? 0);
  setHeldRuns(gauges, holds, now);
  setFlowGates(gauges.flow, flow);
}

/**
 * Times every transaction the store answers (its durability wait: queueing for the group commit plus the fsync)
 * by wrapping the instance's `transact`; the stores expose no commit timing of their own. Returns the undo.
 */
function timeCommits(store: Store, observe: (seconds: number, ok: boolean) => void): () => void {
  const original = store.transact;
  const timed: Store['transact'] = <R>(body: Parameters<Store['transact']>[0]) => {
    const started = performance.now();
    const answer = original.call(store, body) as Promise<R>;
    answer.then(
      () => observe((performance.now() - started) / 1000, true),
      () => observe((performance.now() - started) / 1000, false),
    );
    return answer;
  };
  store.transact = timed;
  return () => {
    if (store.transact === timed) store.transact = original;
  };
}

function commitInstruments(registers: Registry[]) {
  return {
    commits: new Counter({
      name: 'coven_store_commits_total',
      help: 'Durable commits that changed something (a group commit counts once)',
      registers,
    }),
    transactions: new Counter({
      name: 'coven_store_transactions_total',
      help: 'Store transactions answered, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    wait: new Histogram({
      name: 'coven_store_commit_wait_seconds',
      help: 'From a transaction being handed to the store until it is durable (or refused)',
      buckets: COMMIT_BUCKETS,
      registers,
    }),
    events: new Counter({
      name: 'coven_changefeed_events_total',
      help: 'Changefeed events committed since the metrics started',
      registers,
    }),
  };
}

/** Shares one in-flight read among the collectors a single scrape calls together. */
function shared(read: () => Promise<void>): () => Promise<void> {
  let inflight: Promise<void> | undefined;
  return () => (inflight ??= read().finally(() => (inflight = undefined)));
}

/**
 * The upstream SLO measures as Prometheus metrics (prom-client) on a registry of their own.
 *
 * @example
 * ```ts
 * const metrics = createEngineMetrics({ engine });
 * engine.start((report) => metrics.observePass(report));
 * const body = await metrics.text(); // serve with Content-Type: metrics.contentType
 * ```
 */
export function createEngineMetrics(options: EngineMetricsOptions): EngineMetrics {
  const { engine } = options;
  const store = options.store ?? engine.services.store;
  const clock = options.clock ?? engine.services.clock;
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const pass = passInstruments(registers);
  const commit = commitInstruments(registers);
  const latency = latencyHistograms(registers);
  const countOutcome = attemptOutcomes(registers);
  const steps = new StepLatencies(
    store,
    clock.now().getTime(),
    (step, seconds) => latency[step].observe(seconds),
    async (event, reader) => {
      commit.events.inc();
      await countOutcome(event, reader);
    },
  );
  const scan = () => steps.scan().catch(() => undefined);
  // The gauges' collectors read the store they belong to, so the reader closes over the gauges made after it.
  const holder: { gauges?: StoreGauges } = {};
  holder.gauges = storeGauges(
    registers,
    shared(() => readStoreGauges(store, clock, holder.gauges!)),
  );
  const facts = new PassFacts();
  const unsubscribe = store.onCommit(() => commit.commits.inc());
  const untime = timeCommits(store, (seconds, ok) => {
    commit.wait.observe(seconds);
    commit.transactions.inc({ outcome: ok ? 'committed' : 'refused' });
  });
  return {
    registry,
    contentType: registry.contentType,
    observePass(report) {
      facts.observe(report);
      pass.duration.observe(passDurationMs(report) / 1000);
      for (const [phase, ms] of Object.entries(report.phaseMs)) pass.phase.observe({ phase }, ms / 1000);
      pass.passes.inc({ outcome: report.errors.length === 0 ? 'ok' : 'errors' });
      pass.stepErrors.inc(report.errors.length);
      pass.lastPass.set(Date.parse(report.at) / 1000);
      pass.planned.inc(report.planned);
      pass.settled.inc(report.settled);
      pass.compacted.inc(report.compacted);
      for (const launch of report.launches) pass.launches.inc({ outcome: launch.result.outcome });
      void scan();
    },
    async text() {
      // Transitions first, so the latency histograms include every commit the gauges below reflect.
      await scan();
      return registry.metrics();
    },
    passes: () => facts.snapshot(),
    dispose() {
      unsubscribe();
      untime();
    },
  };
}
