import { OccurrenceState } from '../../machines/index.js';
import { CommandHandler } from '../command-handler/command-handler.js';
import { DEFAULT_PRODUCER, defaultNewId, defaultRequirements } from '../command-handler/context.js';
import { disownLaunch, markLaunchSending, releaseLaunch, sendMarkedLaunch } from '../dispatcher/launch-release.js';
import { StoreConflictError, StreamSequenceError } from '../store/store.js';
import { Worker } from '../worker/worker.js';
import { systemClock } from '../clock/clock.js';
import { type StepContext } from '../domain/lifecycle.js';
import { stateOf } from '../domain/records.js';
import { PENDING_LAUNCH } from '../domain/outbox.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { dispatchCandidates } from '../dispatcher/dispatch-candidates.js';
import { EngineServices, LaunchesInFlight } from '../domain/services.js';
import { COMMIT_WAKE_MS, PassLoop } from './pass-loop.js';
import { registerLiveInstance, renewOwnerLease, RENEWALS_PER_LEASE } from '../domain/owner-lease.js';
import { WorkPartition } from '../domain/work-partition.js';
import type { PassRun, TickReport } from './pass-phases.js';
import { confineCwd } from '../command-handler/cwd-requirements.js';
import { InspectionFeed } from '../domain/inspection-feed.js';
import { operatorCommands } from '../command-handler/operator-commands.js';
import { RetentionPolicy } from '../retention/policy.js';
import type { LaunchOutcome, QueuedLaunch } from '../domain/launch-outcome.js';
import { reportLaunch } from '../domain/launch-commit.js';
import { ENGINE_PARTS, type EngineParts } from './parts.js';
import { ExitCues } from './exit-cues.js';
import { attemptOfOutbox } from '../domain/ids.js';
import { systemTimers, type EngineTimers, type PassTrigger } from './timers.js';
import { holdGeneration, leadershipOf, type Leadership } from '../domain/scheduler-generation.js';
import { leaseMsOf, type EngineOptions } from './engine-options.js';

export { COMMIT_WAKE_MS };

export type { EngineOptions };

export type { TickReport } from './pass-phases.js';

/**
 * The orchestration engine: the contract's command handler, scheduler, dispatcher and worker over one
 * store. `tick()` runs one pass at the clock's instant (tests and simulations drive it); `start()` runs
 * passes on a timer with the real clock.
 *
 * @example
 * ```ts
 * const engine = createEngine({
 *   store: await JsonFileStore.open('automations.json'),
 *   runtimes: [new SimulatedRuntime()],
 * });
 * await engine.commands.handle(createCommand);
 * await engine.tick();
 * ```
 */
export class Engine {
  readonly commands: CommandHandler;
  readonly services: EngineServices;
  private readonly worker: Worker;
  /** Runtimes' session-exit cues, heard while the engine runs (see {@link Engine.start}). */
  private readonly cues: ExitCues;
  /** Occurrences whose launch this process is releasing, with how many releases are in flight for each. */
  private readonly releasing = new LaunchesInFlight();
  private readonly retention: RetentionPolicy | undefined;
  /** Engine-clock instant of the next retention sweep (0: the first pass sweeps). */
  private nextSweepAt = 0;
  private readonly timers: EngineTimers;
  /** When passes run once started (see {@link Engine.start}). */
  private readonly loop: PassLoop;
  private inspection: InspectionFeed | undefined;
  private renewal: unknown;
  private readonly unregister: () => void;

  private readonly parts: EngineParts;

  /** `parts` is internal: the invariant self-check builds engines with broken parts (see {@link EngineParts}). */
  constructor(options: EngineOptions, parts: EngineParts = ENGINE_PARTS) {
    this.parts = parts;
    this.timers = options.timers ?? systemTimers;
    const clock = options.clock ?? systemClock;
    const instanceId = options.instanceId ?? `engine-${process.pid}`;
    const producer = options.producer ?? { ...DEFAULT_PRODUCER, instanceId };
    const newId = options.newId ?? defaultNewId;
    this.services = new EngineServices(
      options.store,
      clock,
      new Map(options.runtimes.map((r) => [r.runtimeId, r])),
      instanceId,
      producer,
      leaseMsOf(options),
      newId,
      parts.actors,
    );
    if (options.passConcurrency !== undefined) this.services.passConcurrency = options.passConcurrency;
    if (options.host !== undefined) this.services.host = options.host;
    this.services.delivery = options.delivery;
    this.services.tracing = options.tracing;
    const planConcurrency = options.planConcurrency ?? options.passConcurrency;
    if (planConcurrency !== undefined) this.services.planConcurrency = planConcurrency;
    this.retention = options.retention === false ? undefined : RetentionPolicy.from(options.retention);
    this.worker = new Worker(this.services);
    this.cues = new ExitCues((attemptId) => this.worker.observe(attemptId));
    this.loop = new PassLoop(this.services, this.timers, (trigger) => this.tick(trigger));
    const unregisterInstance = registerLiveInstance(instanceId);
    // Any commit (this engine's or another's) may have ended work that held eligible work back (a settle frees a
    // cap): passes judge held work again after one, whether the loop or a caller's tick() runs them.
    const unheard = options.store.onCommit(() => this.services.waitingWork.heard());
    this.unregister = () => {
      unregisterInstance();
      unheard();
    };
    if (options.inspector !== undefined) this.inspection = new InspectionFeed(options.store, options.inspector).start();
    this.commands = new CommandHandler({
      store: options.store,
      clock,
      producer,
      newId,
      // A runtime with cwd roots refuses a definition outside them at activation, not only at launch.
      requirements:
        options.requirements ??
        confineCwd(options.runtimes, defaultRequirements(options.runtimes.map((r) => r.runtimeId))),
      onCommitted: (transitions) => this.services.tracing?.committed(transitions),
      operator: operatorCommands(this.services, {
        dispatch: (occurrenceId) => this.dispatch(occurrenceId),
        queue: (step, occurrenceId) => this.queueLaunchHere(step, occurrenceId),
      }),
    });
  }

  /** One pass at the clock's instant: the engine's pass phases (pass-phases.ts), each timed. */
  async tick(trigger: PassTrigger = 'manual'): Promise<TickReport> {
    const svc = this.services;
    // Before anything else: a stale instance's pass is refused whole (StaleGenerationError), nothing committed.
    const generation = await holdGeneration(svc);
    const report: TickReport = {
      at: svc.clock.now().toISOString(),
      generation,
      trigger,
      planned: 0,
      launched: 0,
      settled: 0,
      compacted: 0,
      launches: [],
      errors: [],
      contended: 0,
      passedOver: 0,
      phaseMs: { plan: 0, advance: 0, dispatch: 0, observe: 0, retention: 0, checkpoint: 0 },
    };
    // Settles the cues drove since the last pass are reported with it; a lost race among them is contention.
    const cued = this.cues.takeReport();
    report.settled = cued.settled;
    report.errors.push(...cued.failures);
    const { partition, dueAtStart } = await svc.store.read(async (r) => ({
      partition: await WorkPartition.read(svc, r),
      // Asked with this read, not in a transaction of its own: whether the set-based claim has anything to take.
      dueAtStart: svc.store.sharedByEngines === true && ((await r.hasDueOccurrences?.(report.at)) ?? true),
    }));
    const pass: PassRun = {
      svc,
      report,
      partition,
      dueAtStart,
      carry: {
        through: 'launched',
        // Before the plan's launches, as before the dispatch phase's: another engine must see this one alive.
        beforePlanning: () => renewOwnerLease(svc, 'launching'),
        queue: (step, occurrenceId) => this.queueLaunchHere(step, occurrenceId),
      },
      findings: { plannedUnclaimed: 0 },
      dispatchAll: (errors) => this.dispatchAll(errors, partition),
      observeAll: (errors) => this.worker.observeAll(errors, partition),
      sweepRetentionIfDue: (errors) => this.sweepRetentionIfDue(errors),
    };
    const passedOverBefore = svc.passedOver;
    for (const phase of this.parts.passPhases) {
      // A stopwatch, not the engine clock: durations are reported only, so they cannot affect determinism.
      const started = performance.now();
      await phase.run(pass);
      report.phaseMs[phase.name] = performance.now() - started;
    }
    report.passedOver = svc.passedOver - passedOverBefore;
    const lost = report.errors.filter(lostRace);
    report.contended = lost.length;
    if (lost.length > 0) report.errors = report.errors.filter((e) => !lostRace(e));
    return report;
  }

  private async sweepRetentionIfDue(errors: Error[]): Promise<number> {
    const now = this.services.clock.now().getTime();
    if (this.retention === undefined || now < this.nextSweepAt) return 0;
    this.nextSweepAt = now + this.retention.sweepEveryMs;
    return (await this.parts.sweepRetention(this.services, this.retention, errors)).occurrences;
  }

  /** Accepts and launches one claimed occurrence now (runNow and operator recovery use this). */
  async dispatch(occurrenceId: string): Promise<LaunchOutcome | undefined> {
    return this.parts.dispatchOccurrence(this.services, occurrenceId, (step, id) => this.queueLaunchHere(step, id));
  }

  /**
   * A launch accepted, queued and marked `sending` in `step`'s transaction: a manual run's command (run-now.ts) or
   * a pass's dispatch, one commit before the runtime is called either way.
   */
  private async queueLaunchHere(step: StepContext, occurrenceId: string): Promise<QueuedLaunch | undefined> {
    const svc = this.services;
    const outboxId = await this.parts.queueLaunch(svc, step, occurrenceId);
    if (outboxId === undefined) return undefined;
    const sending = await markLaunchSending(svc, step, outboxId);
    if (sending === undefined) return undefined;
    // Released by this engine once the commit is durable: nothing in the commit waits for a pass.
    step.tx.routine?.();
    return {
      release: () =>
        this.releasingHere(occurrenceId, () =>
          this.cues.whileSending(
            attemptOfOutbox(outboxId),
            (exitCued) => sendMarkedLaunch(svc, outboxId, sending, exitCued),
            exitSettledIn,
          ),
        ),
      abandon: () => disownLaunch(svc, outboxId),
    };
  }

  /**
   * Runs a launch's release with its occurrence marked as in this process's hands: a pass has nothing to
   * do for it meanwhile (its launch is `sending`, never sent twice), so it skips the transaction that would say so.
   */
  private async releasingHere<T>(occurrenceId: string, release: () => Promise<T>): Promise<T> {
    this.releasing.add(occurrenceId);
    try {
      return await release();
    } finally {
      this.releasing.delete(occurrenceId);
    }
  }

  /**
   * Releases launches committed but never sent (a crash between the commit and the launch) and
   * dispatches every claimed occurrence. A launch already `sending` is never re-sent.
   */
  private async dispatchAll(errors: Error[], partition: WorkPartition): Promise<LaunchOutcome[]> {
    const outcomes: LaunchOutcome[] = [];
    for (const { id } of await this.services.store.read((r) => r.list(PENDING_LAUNCH)))
      await reportLaunch(`launch ${id}`, () => this.release(id), outcomes, errors);
    // Only claimed and dispatching occurrences can be dispatched: the index says which, without reading the rest.
    // Each engine dispatches what it claimed (and its share of what no live engine holds): see WorkPartition.
    const live = await this.services.store.read((r) => r.liveWork('occurrence', { exceptHeldBy: partition.others }));
    const dispatchable = live.filter(
      (w) =>
        (w.state === OccurrenceState.claimed || w.state === OccurrenceState.dispatching) &&
        partition.mine(w.automationId ?? w.id, w.claimedBy) &&
        !this.releasing.has(w.id),
    );
    const ids = dispatchable.map((w) => w.id);
    const due = await this.services.store.read((r) => dispatchCandidates(r, ids));
    await forEachConcurrently(
      dispatchable.filter((w) => due.has(w.id)),
      this.services.passConcurrency,
      ({ id }) => reportLaunch(`occurrence ${id}`, () => this.dispatch(id), outcomes, errors),
    );
    return outcomes;
  }

  private async release(outboxId: string): Promise<LaunchOutcome> {
    return this.cues.whileSending(
      attemptOfOutbox(outboxId),
      (exitCued) => releaseLaunch(this.services, outboxId, exitCued),
      exitSettledIn,
    );
  }

  /**
   * Runs passes until {@link Engine.stop}: one now (reconciling whatever a previous process left: expired
   * leases, launches committed but not sent, sessions to re-observe), then each time something is due —
   * the next slot, lease expiry, deadline or backoff, or every second while sessions run — and within
   * {@link COMMIT_WAKE_MS} of any commit made outside a pass (a command, another engine); of a routine one, here or
   * by another engine (a manual run whose launch its engine sends itself, its answer, a cued exit settled), within
   * the observation interval (see `StoreTransaction.routine`). Meant for the real clock. While it runs, a runtime
   * that cues session exits (`Runtime.onSessionExit`) has each exited attempt settled at once, between passes;
   * passes still observe every session, for runtimes without cues and lost cues.
   */
  start(onPass?: (report: TickReport) => void): void {
    if (this.loop.started) return;
    this.cues.listen(this.services.runtimes.values());
    this.loop.start(onPass);
    // Passes renew too; the timer keeps the lease while one pass runs long.
    this.renewal = this.timers.setInterval(
      () => void renewOwnerLease(this.services).catch(() => undefined),
      this.services.leaseMs / RENEWALS_PER_LEASE,
    );
  }

  /**
   * Whether this instance still leads: false once a newer generation of its instance id (a restarted process)
   * took its owner lease, whose passes then are refused. The daemon's doctor reports this.
   *
   * @example
   * ```ts
   * const { isLeader, replacedByGeneration } = await engine.leadership();
   * if (!isLeader) console.warn(`replaced by generation ${replacedByGeneration}; stop this process`);
   * ```
   */
  leadership(): Promise<Leadership> {
    return leadershipOf(this.services);
  }

  /** Resolves once the inspector was sent everything committed so far (at once without an inspector). */
  async inspected(): Promise<void> {
    await this.inspection?.caughtUp();
  }

  /** Stops passes and the inspector; other engines of this process then know this instance is gone. */
  async stop(): Promise<void> {
    await this.inspection?.stop();
    this.unregister();
    const loop = this.loop.stop();
    if (this.renewal !== undefined) this.timers.clearInterval(this.renewal);
    this.renewal = undefined;
    const cues = this.cues.close();
    await loop;
    await cues;
  }
}

/** A step refused because another writer committed first: its own error or the one a phase wrapped. */
function lostRace(error: Error): boolean {
  const cause = error.cause ?? error;
  return cause instanceof StoreConflictError || cause instanceof StreamSequenceError;
}

export function createEngine(options: EngineOptions): Engine {
  return new Engine(options);
}

export { stateOf };

/** Whether a release settled its session's cued exit in the answer's own commit (see ExitCues.whileSending). */
const exitSettledIn = (outcome: LaunchOutcome | undefined): boolean => outcome?.exitSettled === true;
