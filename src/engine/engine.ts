import { CommandHandler } from '../command-handler/command-handler.js';
import { DEFAULT_PRODUCER, defaultNewId, defaultRequirements, type RequirementsCheck } from '../command-handler/context.js';
import type { ProducerIdentity } from '../changefeed/event-envelope.js';
import { acceptAndDispatch, releaseLaunch, type LaunchOutcome } from '../dispatcher/dispatcher.js';
import type { Runtime } from '../runtime/runtime.js';
import { advanceAll } from '../scheduler/occurrences.js';
import { planDueSlots } from '../scheduler/planning.js';
import type { Store } from '../store/store.js';
import { Worker } from '../worker/worker.js';
import { systemClock, type Clock } from './clock.js';
import { LIVE_INDEX } from './lifecycle.js';
import { KINDS, stateOf } from './records.js';
import { DEFAULT_LEASE_MINUTES, EngineServices } from './services.js';
import { operatorCommands } from '../command-handler/operator-commands.js';

export interface EngineOptions {
  store: Store;
  /** Runtimes by the `runtimeRequirements.runtimeId` definitions name. */
  runtimes: Runtime[];
  clock?: Clock;
  /** Names this engine in claims (`claimedBy`) and event producers; unique per process. */
  instanceId?: string;
  leaseMinutes?: number;
  producer?: ProducerIdentity;
  newId?: () => string;
  requirements?: RequirementsCheck;
}

export interface TickReport {
  at: string;
  planned: number;
  launched: number;
  settled: number;
  launches: LaunchOutcome[];
}

/**
 * The orchestration engine: the contract's command handler, scheduler, dispatcher and worker over one
 * store. `tick()` runs one pass at the clock's instant (tests and simulations drive it); `start()` runs
 * passes on a timer with the real clock.
 *
 * @example
 * ```ts
 * const engine = createEngine({ store: await JsonFileStore.open('automations.json'), runtimes: [new SimulatedRuntime()] });
 * await engine.commands.handle(createCommand);
 * await engine.tick();
 * ```
 */
export class Engine {
  readonly commands: CommandHandler;
  readonly services: EngineServices;
  private readonly worker: Worker;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<TickReport> | undefined;

  constructor(options: EngineOptions) {
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
      options.leaseMinutes ?? DEFAULT_LEASE_MINUTES,
      newId,
    );
    this.worker = new Worker(this.services);
    this.commands = new CommandHandler({
      store: options.store,
      clock,
      producer,
      newId,
      requirements: options.requirements ?? defaultRequirements(options.runtimes.map((r) => r.runtimeId)),
      operator: operatorCommands(this.services, (occurrenceId) => this.dispatch(occurrenceId)),
    });
  }

  /** One pass: plan due slots, advance occurrences (claims, leases, timeouts), dispatch, observe. */
  async tick(): Promise<TickReport> {
    const svc = this.services;
    const at = svc.clock.now().toISOString();
    const planned = await planDueSlots(svc);
    const stops = await advanceAll(svc);
    for (const stop of stops) await svc.runtime(stop.runtimeId)?.cancel(stop.sessionId, svc.clock.now()).catch(() => undefined);
    const launches = await this.dispatchAll();
    const settled = await this.worker.observeAll();
    return { at, planned: planned.length, launched: launches.filter((l) => l.result.outcome === 'started').length, settled, launches };
  }

  /** Accepts and launches one claimed occurrence now (runNow and operator recovery use this). */
  async dispatch(occurrenceId: string): Promise<LaunchOutcome | undefined> {
    const outboxId = await this.services.step((step) => acceptAndDispatch(this.services, step, occurrenceId));
    return outboxId === undefined ? undefined : this.release(outboxId);
  }

  /**
   * Releases launches committed but never sent (a crash between the commit and the launch) and
   * dispatches every claimed occurrence. A launch already `sending` is never re-sent.
   */
  private async dispatchAll(): Promise<LaunchOutcome[]> {
    const outcomes: LaunchOutcome[] = [];
    for (const { id } of await this.services.store.read((r) => r.list('pending-launch'))) outcomes.push(await this.release(id));
    const live = await this.services.store.read((r) => r.list(LIVE_INDEX.occurrence));
    for (const { id } of live) {
      const occurrence = await this.services.store.read((r) => r.get<{ snapshot: { value: string }; attributes: { held: boolean } }>(KINDS.occurrence, id));
      if (occurrence === undefined || occurrence.data.attributes.held) continue;
      const state = occurrence.data.snapshot.value;
      if (state !== 'claimed' && state !== 'dispatching') continue;
      const outcome = await this.dispatch(id);
      if (outcome !== undefined) outcomes.push(outcome);
    }
    return outcomes;
  }

  private async release(outboxId: string): Promise<LaunchOutcome> {
    const outcome = await releaseLaunch(this.services, outboxId);
    if (outcome.quarantine !== undefined) {
      const { automationId, reason } = outcome.quarantine;
      await this.services.step(async (step) => {
        if ((await step.tx.get(KINDS.quarantine, automationId)) === undefined) {
          await step.tx.put(KINDS.quarantine, automationId, { since: step.now, reason }, { expectedVersion: null });
        }
      });
    }
    return outcome;
  }

  /** Runs passes every `intervalMs` with the engine's clock until {@link Engine.stop}. */
  start(intervalMs = 1000): void {
    if (this.timer !== undefined) return;
    const loop = () => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
      });
      this.running.catch(() => undefined);
    };
    loop();
    this.timer = setInterval(() => {
      if (this.running === undefined) loop();
    }, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }
}

export function createEngine(options: EngineOptions): Engine {
  return new Engine(options);
}

export { stateOf };
