import type { EngineServices } from '../domain/services.js';
import { StaleGenerationError } from '../domain/scheduler-generation.js';
import { nextWakeAt, OBSERVE_INTERVAL_MS } from './next-wake.js';
import type { TickReport } from './pass-phases.js';
import type { EngineTimers, PassTrigger } from './timers.js';

/**
 * Outside commits come in bursts (a client's commands, a storm of run-now requests): one pass this long after
 * the first serves the whole burst, instead of a pass per commit. Well inside the planning latency gate.
 */
export const COMMIT_WAKE_MS = 100;

/**
 * When a started engine runs its passes (see `Engine.start`): one at once, then at the next due instant the pass
 * reads at its end, and sooner when a commit is heard. A commit that is not routine wakes a pass within
 * {@link COMMIT_WAKE_MS}; a routine one (`StoreTransaction.routine`, here or by another engine) within the
 * observation interval. A pass's own commits do not wake it; one heard while it ran that it may not have read
 * (another engine's, or a command landing as it computed its next wake-up) has it look again within
 * {@link COMMIT_WAKE_MS}.
 */
export class PassLoop {
  private timer: unknown;
  /** When the pending timer fires (performance.now() time base). */
  private timerDueAt = 0;
  private running: Promise<TickReport> | undefined;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private onPass: ((report: TickReport) => void) | undefined;
  /** Another store's commit, not routine, arrived while a pass ran. */
  private outsideCommitDuringPass = false;
  /** Local commits, not routine, heard while a pass counted as running (its own among them). */
  private localCommitsDuringPass = 0;

  constructor(
    private readonly services: EngineServices,
    private readonly timers: EngineTimers,
    private readonly tick: (trigger: PassTrigger) => Promise<TickReport>,
  ) {}

  /** Whether the loop runs (between {@link start} and {@link stop}). */
  get started(): boolean {
    return !this.stopped;
  }

  /** Starts the loop with a pass at once; `onPass` hears each pass's report. */
  start(onPass?: (report: TickReport) => void): void {
    this.stopped = false;
    this.onPass = onPass;
    this.unsubscribe = this.services.store.onCommit((source, routine) => {
      // A pass's own commits would wake it forever: those it may have read before are kept for its end (below).
      if (this.running === undefined) this.wakeWithin(routine === true ? this.routineWakeMs() : COMMIT_WAKE_MS);
      else if (routine !== true && source === 'outside') this.outsideCommitDuringPass = true;
      else if (routine !== true) this.localCommitsDuringPass++;
    });
    this.schedule(0, 'startup');
  }

  /** Stops the loop; resolves once a pass under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** A routine commit waits for no pass, but came after the next wake-up was computed: a pass looks within this. */
  private routineWakeMs(): number {
    return Math.min(OBSERVE_INTERVAL_MS, this.services.leaseMs);
  }

  /** Makes sure a pass starts within `delayMs`, keeping a timer that already fires sooner. */
  private wakeWithin(delayMs: number): void {
    if (this.timer !== undefined && this.timerDueAt <= performance.now() + delayMs) return;
    this.schedule(delayMs, 'wake');
  }

  private schedule(delayMs: number, trigger: PassTrigger): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timerDueAt = performance.now() + delayMs;
    const fire = () => {
      this.timer = undefined;
      this.running = this.pass(trigger);
      this.running.catch(() => undefined);
    };
    this.timer = this.timers.setTimeout(fire, delayMs, trigger);
  }

  /** One pass, then the timer for the next: at the due instant it read, or sooner if it raced or heard a commit. */
  private async pass(trigger: PassTrigger): Promise<TickReport> {
    let report: TickReport;
    let delay: number;
    let heard: number;
    try {
      report = await this.tick(trigger);
      this.onPass?.(report);
      // The pass made its commits; one heard from here on is another's (a command), which this read may miss.
      heard = this.localCommitsDuringPass;
      const wake = await this.services.store.read((r) => nextWakeAt(this.services, r));
      delay = Math.max(0, wake.getTime() - this.services.clock.now().getTime());
      // Work another engine held or won may be left half done (claimed, not dispatched): look again soon.
      const raced = report.contended > 0 || report.passedOver > 0 || this.outsideCommitDuringPass;
      this.outsideCommitDuringPass = false;
      if (raced) delay = Math.min(delay, COMMIT_WAKE_MS);
    } catch (error) {
      this.running = undefined;
      // A replaced instance never passes again; any other failure is looked at again shortly.
      if (!(error instanceof StaleGenerationError)) this.schedule(OBSERVE_INTERVAL_MS, 'retry');
      throw error;
    }
    this.running = undefined;
    this.schedule(this.localCommitsDuringPass === heard ? delay : Math.min(delay, COMMIT_WAKE_MS), 'wait');
    return report;
  }
}
