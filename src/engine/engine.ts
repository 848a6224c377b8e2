import { OccurrenceState } from '../../machines/index.js';
import type { OutputDelivery } from '../runtime/output-delivery.js';
import { CommandHandler } from '../command-handler/command-handler.js';
import {
  DEFAULT_PRODUCER,
  defaultNewId,
  defaultRequirements,
  type RequirementsCheck,
} from '../command-handler/context.js';
import type { ProducerIdentity } from '../changefeed/event-envelope.js';
import { releaseLaunch } from '../dispatcher/launch-release.js';
import type { Runtime } from '../runtime/runtime.js';
import { StoreConflictError, StreamSequenceError, type Store } from '../store/store.js';
import { Worker } from '../worker/worker.js';
import { systemClock, type Clock } from '../clock/clock.js';
import { LIVE_INDEX } from '../domain/lifecycle.js';
import { KINDS, stateOf, type OccurrenceRecord } from '../domain/records.js';
import { PENDING_LAUNCH } from '../domain/outbox.js';
import { isRunHeld } from '../domain/run-hold.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { DEFAULT_LEASE_SECONDS, EngineServices } from '../domain/services.js';
import { nextWakeAt, OBSERVE_INTERVAL_MS } from './next-wake.js';
import { registerLiveInstance, renewOwnerLease, RENEWALS_PER_LEASE } from '../domain/owner-lease.js';
import type { PassRun, TickReport } from './pass-phases.js';
import { confineCwd } from '../command-handler/cwd-requirements.js';
import { InspectionFeed } from '../domain/inspection-feed.js';
import type { InspectionSink } from '../domain/inspection.js';
import { operatorCommands } from '../command-handler/operator-commands.js';
import { RetentionPolicy, type RetentionOptions } from '../retention/policy.js';
import { type LaunchOutcome } from '../domain/launch-outcome.js';
import { ENGINE_PARTS, type EngineParts } from './parts.js';
import { ExitCues } from './exit-cues.js';
import { attemptOfOutbox } from '../domain/ids.js';
/**
 * Outside commits come in bursts (a client's commands, a storm of run-now requests): one pass this long after
 * the first serves the whole burst, instead of a pass per commit. Well inside the planning latency gate.
 */
export const COMMIT_WAKE_MS = 100;

export interface EngineOptions {
  store: Store;
  /** Runtimes by the `runtimeRequirements.runtimeId` definitions name. */
  runtimes: Runtime[];
  clock?: Clock;
  /** Names this engine in claims (`claimedBy`) and event producers; unique per process. */
  instanceId?: string;
  /**
   * A claim's lease (default {@link DEFAULT_LEASE_SECONDS}). The engine renews its own owner lease while it
   * runs, so this bounds how long a dead engine's undecided launches wait before recovery, not how long a
   * live one may take.
   */
  leaseSeconds?: number;
  /**
   * The host this engine's owner lease names (default `os.hostname()`). Engines whose leases name the same host
   * judge each other's liveness by process id at once; across hosts, a dead engine's work waits out its lease.
   * Set it where host names repeat across machines or process ids are not comparable (containers sharing a name).
   */
  host?: string;
  /** The lease in minutes, as upstream configures it; `leaseSeconds` wins when both are given. */
  leaseMinutes?: number;
  /**
   * Definitions, occurrences or attempts a pass phase handles at once (default 64). Each still commits in its
   * own transaction; concurrency lets the store share one durable write among them. 1 keeps strict order.
   */
  passConcurrency?: number;
  /**
   * Due definitions the planning phase plans at once (default 256; `passConcurrency` when only that is
   * given, so 1 still keeps strict order). Each plan is still its own transaction.
   */
  planConcurrency?: number;
  producer?: ProducerIdentity;
  newId?: () => string;
  requirements?: RequirementsCheck;
  /**
   * A Stately inspector (`createInspector(adapter)` from @statelyai/inspect, or any {@link InspectionSink}):
   * fed from the committed changefeed, in commit order, from the engine's construction until {@link Engine.stop}.
   * Every definition, occurrence, run and attempt appears once, from its first state, then every transition.
   */
  inspector?: InspectionSink;
  /**
   * Retention of settled history by the contract's classes (default: ephemeral 1 day, standard 30, extended
   * 365, legal_hold forever). Each compacted occurrence and run keeps one `feed.snapshot` event with its final
   * state; its records and earlier events leave the store. `false` keeps all history.
   */
  retention?: RetentionOptions | false;
  /**
   * Where runs of definitions with an atomic outputTarget deliver their session's output (for instance an
   * `AtomicFileDelivery` rooted at a folder). Without one, such runs settle failed: their output cannot commit.
   */
  delivery?: OutputDelivery;
}

/**
 * Fault injection for conformance scenarios: the pass stops right after the named phase's commits, as if
 * the process died there; whatever later phases would have committed is lost.
 */
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
  private readonly retention: RetentionPolicy | undefined;
  /** Engine-clock instant of the next retention sweep (0: the first pass sweeps). */
  private nextSweepAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (performance.now() time base). */
  private timerDueAt = 0;
  private running: Promise<TickReport> | undefined;
  private stopped = true;
  private inspection: InspectionFeed | undefined;
  private unsubscribe: (() => void) | undefined;
  private onPass: ((report: TickReport) => void) | undefined;
  private renewal: NodeJS.Timeout | undefined;
  private readonly unregister: () => void;
  /** Another store's commit arrived while a pass ran (see {@link Engine.start}). */
  private outsideCommitDuringPass = false;

  private readonly parts: EngineParts;

  /** `parts` is internal: the invariant self-check builds engines with broken parts (see {@link EngineParts}). */
  constructor(options: EngineOptions, parts: EngineParts = ENGINE_PARTS) {
    this.parts = parts;
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
      options.leaseSeconds !== undefined
        ? options.leaseSeconds * 1000
        : options.leaseMinutes !== undefined
          ? options.leaseMinutes * 60_000
          : DEFAULT_LEASE_SECONDS * 1000,
      newId,
      parts.actors,
    );
    if (options.passConcurrency !== undefined) this.services.passConcurrency = options.passConcurrency;
    if (options.host !== undefined) this.services.host = options.host;
    this.services.delivery = options.delivery;
    const planConcurrency = options.planConcurrency ?? options.passConcurrency;
    if (planConcurrency !== undefined) this.services.planConcurrency = planConcurrency;
    this.retention = options.retention === false ? undefined : RetentionPolicy.from(options.retention);
    this.worker = new Worker(this.services);
    this.cues = new ExitCues((attemptId) => this.worker.observe(attemptId));
    this.unregister = registerLiveInstance(instanceId);
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
      operator: operatorCommands(this.services, (occurrenceId) => this.dispatch(occurrenceId)),
    });
  }

  /** One pass at the clock's instant: the engine's pass phases (pass-phases.ts), each timed. */
  async tick(): Promise<TickReport> {
    const svc = this.services;
    const report: TickReport = {
      at: svc.clock.now().toISOString(),
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
    const pass: PassRun = {
      svc,
      report,
      dispatchAll: (errors) => this.dispatchAll(errors),
      observeAll: (errors) => this.worker.observeAll(errors),
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
    return this.parts.dispatchOccurrence(this.services, occurrenceId, (outboxId) => this.release(outboxId));
  }

  /**
   * Releases launches committed but never sent (a crash between the commit and the launch) and
   * dispatches every claimed occurrence. A launch already `sending` is never re-sent.
   */
  private async dispatchAll(errors: Error[]): Promise<LaunchOutcome[]> {
    const outcomes: LaunchOutcome[] = [];
    const attempt = async (what: string, work: () => Promise<LaunchOutcome | undefined>) => {
      try {
        const outcome = await work();
        if (outcome !== undefined) outcomes.push(outcome);
        // The engine refused to launch (integrity): an operator must hear of it, not only the records.
        if (outcome?.error !== undefined) errors.push(outcome.error);
      } catch (error) {
        errors.push(new Error(`dispatcher: ${what}: ${(error as Error).message}`, { cause: error }));
      }
    };
    for (const { id } of await this.services.store.read((r) => r.list(PENDING_LAUNCH)))
      await attempt(`launch ${id}`, () => this.release(id));
    const live = await this.services.store.read((r) => r.list(LIVE_INDEX.occurrence));
    await forEachConcurrently(live, this.services.passConcurrency, async ({ id }) => {
      const dispatchable = await this.services.store.read(async (r) => {
        const occurrence = await r.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
        if (occurrence === undefined) return false;
        const state = stateOf(occurrence as OccurrenceRecord);
        if (state !== OccurrenceState.claimed && state !== OccurrenceState.dispatching) return false;
        return !(await isRunHeld(r, occurrence as OccurrenceRecord));
      });
      if (dispatchable) await attempt(`occurrence ${id}`, () => this.dispatch(id));
    });
    return outcomes;
  }

  private async release(outboxId: string): Promise<LaunchOutcome> {
    return this.cues.whileSending(attemptOfOutbox(outboxId), (exitCued) =>
      releaseLaunch(this.services, outboxId, exitCued),
    );
  }

  /**
   * Runs passes until {@link Engine.stop}: one now (reconciling whatever a previous process left: expired
   * leases, launches committed but not sent, sessions to re-observe), then each time something is due —
   * the next slot, lease expiry, deadline or backoff, or every second while sessions run — and within
   * {@link COMMIT_WAKE_MS} of any outside commit (a command, another engine). Meant for the real clock.
   * While it runs, a runtime that cues session exits (`Runtime.onSessionExit`) has each exited attempt settled
   * at once, between passes; passes still observe every session, for runtimes without cues and lost cues.
   */
  start(onPass?: (report: TickReport) => void): void {
    if (this.stopped === false) return;
    this.stopped = false;
    this.unsubscribe = this.services.store.onCommit((source) => {
      // Commits made by a pass itself would wake it forever; only outside commits reschedule. Another engine's
      // commit heard while this pass runs is kept for after it: the pass may have read before it.
      if (this.running === undefined) this.wakeWithin(COMMIT_WAKE_MS);
      else if (source === 'outside') this.outsideCommitDuringPass = true;
    });
    this.cues.listen(this.services.runtimes.values());
    this.schedule(0);
    this.onPass = onPass;
    // Passes renew too; the timer keeps the lease while one pass runs long.
    this.renewal = setInterval(
      () => void renewOwnerLease(this.services).catch(() => undefined),
      this.services.leaseMs / RENEWALS_PER_LEASE,
    );
    this.renewal.unref();
  }

  /** Resolves once the inspector was sent everything committed so far (at once without an inspector). */
  async inspected(): Promise<void> {
    await this.inspection?.caughtUp();
  }

  /** Stops passes and the inspector; other engines of this process then know this instance is gone. */
  async stop(): Promise<void> {
    await this.inspection?.stop();
    this.stopped = true;
    this.unregister();
    this.unsubscribe?.();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.renewal !== undefined) clearInterval(this.renewal);
    this.renewal = undefined;
    const cues = this.cues.close();
    await this.running?.catch(() => undefined);
    await cues;
  }

  /** Makes sure a pass starts within `delayMs`, keeping a timer that already fires sooner. */
  private wakeWithin(delayMs: number): void {
    if (this.timer !== undefined && this.timerDueAt <= performance.now() + delayMs) return;
    this.schedule(delayMs);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerDueAt = performance.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick()
        .then(async (report) => {
          this.onPass?.(report);
          const wake = await this.services.store.read((r) => nextWakeAt(this.services, r));
          const delay = Math.max(0, wake.getTime() - this.services.clock.now().getTime());
          // Work another engine held or won may be left half done (claimed, not dispatched): look again soon.
          const raced = report.contended > 0 || report.passedOver > 0 || this.outsideCommitDuringPass;
          this.outsideCommitDuringPass = false;
          return { report, delay: raced ? Math.min(delay, COMMIT_WAKE_MS) : delay };
        })
        .then(
          ({ report, delay }) => {
            this.running = undefined;
            this.schedule(delay);
            return report;
          },
          (error: unknown) => {
            this.running = undefined;
            this.schedule(OBSERVE_INTERVAL_MS);
            throw error;
          },
        );
      this.running.catch(() => undefined);
    }, delayMs);
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
