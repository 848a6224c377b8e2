import type { CommandHandler } from '../../command-handler/command-handler.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { integrityOf } from '../../contract/digest.js';
import { SimulatedClock } from '../../clock/clock.js';
import { KINDS, renderOccurrence, type OccurrenceRecord } from '../../domain/records.js';
import { Engine, type EngineOptions } from '../../engine/engine.js';
import { ENGINE_PARTS, type EngineParts } from '../../engine/parts.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Store } from '../../store/store.js';
import type { RetentionOptions } from '../../retention/policy.js';
import { SimulatedRuntime } from '../../runtime/simulated-runtime.js';
import { MemoryStore } from '../../store/memory-store.js';
import { acquireGeneration } from '../../domain/scheduler-generation.js';
import { OCCURRENCE_TERMINAL_STATES } from '../../../machines/index.js';
import { CrashSwitch, type CrashPoint } from '../crash-switch.js';
import { TamperingStore } from './tampering-store.js';
import { FaultInjectingDelivery } from './faulty-delivery.js';
import type { ConformanceVector } from './vector-format.js';

const CRASH_PHASE: Record<string, CrashPoint | 'launch-answer' | 'command'> = {
  plan: 'claim',
  claim: 'dispatch',
  adoption: 'command',
  dispatch: 'observe',
  'session-create': 'launch-answer',
  'first-event': 'launch-answer',
  'terminal-observation': 'observe',
  settlement: 'observe',
  receipt: 'observe',
  'event-publication': 'observe',
  delivery: 'observe',
};

/**
 * A vector without a virtual start does not say when its definitions were made, only that they exist by its first
 * op: they are set up at the start of that op's UTC day, so the slots of that day before the op are theirs to run.
 */
function dayStartOfFirstOp(vector: ConformanceVector): string | undefined {
  const at = vector.input.operations?.find((o) => typeof o.at === 'string')?.at as string | undefined;
  return at === undefined ? undefined : `${at.slice(0, 10)}T00:00:00.000Z`;
}

let keyCounter = 0;
const nextKey = (tag: string) => `conformance-${tag}-${String(++keyCounter).padStart(6, '0')}`;

/** A command envelope from the conformance runner's principal. */
export function envelope(
  name: string,
  payload: Record<string, unknown>,
  extra: { expectedRevision?: number; adoptionKey?: string } = {},
) {
  return {
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: extra.adoptionKey ?? nextKey(name.split('.')[1] ?? 'cmd'),
    ...(extra.expectedRevision === undefined ? {} : { expectedRevision: extra.expectedRevision }),
    origin: { principal: { principalId: 'conformance-runner' }, channel: 'cli' },
    intent: { statement: `conformance ${name}` },
    payload,
  };
}

export async function currentDefinition(handler: CommandHandler, automationId: string) {
  const got = await handler.handle(envelope('definition.get.v1', { automationId }));
  return got.result!.definition as Record<string, unknown>;
}

/** Commits a new revision of a definition with `change` applied to its body. */
export async function reviseWith(
  handler: CommandHandler,
  automationId: string,
  change: (body: Record<string, unknown>) => void,
  lifecycleState?: string,
): Promise<CommandResponse> {
  const current = structuredClone(await currentDefinition(handler, automationId));
  const revision = current.revision as number;
  const { integrity: _old, ...body } = current;
  change(body);
  body.revision = revision + 1;
  if (lifecycleState !== undefined) body.lifecycleState = lifecycleState;
  return handler.handle(
    envelope(
      'definition.revise.v1',
      { definition: { ...body, integrity: integrityOf(body) } },
      {
        expectedRevision: revision,
      },
    ),
  );
}

/** Vector keys like "a" break the contract's key syntax (8–200 chars); they are namespaced, consistently. */
export function contractKey(key: string, notes: string[]): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._:-]{7,199}$/.test(key)) return key;
  const mapped = `conformance-key-${key}`.replace(/[^A-Za-z0-9._:-]/g, '-');
  notes.push(`adoption key "${key}" is not a contract key (8-200 chars); sent as "${mapped}"`);
  return mapped;
}

/**
 * Test seams for the runner's own tests: the engine parts the vector's engines are built from, and wrappers of
 * the runtime and the store they are given (the run keeps reading the simulated runtime's own launch log and the
 * store itself). Tests plant engine faults through them (testkit/invariants/faulty-engine.ts, faulty-runtime.ts,
 * faulty-store.ts) to prove the runner notices; nothing outside tests passes them.
 */
export interface VectorSeams {
  parts?: EngineParts;
  runtime?: (runtime: Runtime) => Runtime;
  store?: (store: Store) => Store;
}

/** One vector's world: a fresh engine on a memory store, a simulated clock and runtime, and what ops set. */
export class VectorRun {
  readonly clock: SimulatedClock;
  readonly tampering: TamperingStore;
  readonly runtime: SimulatedRuntime;
  /** Where runs of definitions with an atomic outputTarget deliver; `deliveryBehavior` sets its faults. */
  readonly delivery = new FaultInjectingDelivery();
  engine: Engine;
  readonly refusals = new Map<string, CommandResponse>();
  /** Instants at which a lifecycle command made a definition active, by automation id (a committed fact). */
  readonly activations = new Map<string, string>();
  /** The phases the engine process died in (or before), in order. */
  readonly processDeaths: string[] = [];
  /** Definitions legacy.import.v1 refused, by upstream's refusal label. */
  readonly importRefusals = new Map<
    string,
    { automationId: string; code: string; message: string; problems?: string[] }
  >();
  readonly notes: string[] = [];
  readonly unsupportedOps: string[] = [];
  /** Limits of this engine an op ran into (it performed the op, within them). */
  readonly limits: string[] = [];
  setupEnd = 0;
  /** Integrity verdicts of the stored receipts when a verifyReceipts op ran (undefined: none ran). */
  receiptVerdicts: boolean[] | undefined;
  /** The receipts as the engine publishes them (read, then redacted), once a redactReceipts op ran. */
  redactedReceipts: Array<Record<string, unknown>> | undefined;
  definitionCount = 0;
  lastPassAt: string | undefined;
  subscriber: { position: number } | undefined;
  retention: RetentionOptions | undefined;
  private pendingCrash: string | undefined;
  private readonly crashes = new CrashSwitch();
  private opIndex = -1;
  private ids = 0;

  constructor(
    readonly vector: ConformanceVector,
    private readonly seams: VectorSeams = {},
  ) {
    const start = vector.virtualTime?.start ?? dayStartOfFirstOp(vector) ?? '2026-03-01T00:00:00.000Z';
    this.clock = new SimulatedClock(start);
    this.tampering = new TamperingStore(new MemoryStore());
    // Upstream's model: an hour's lease, and a runtime that cannot say what became of a launch whose answer was lost.
    this.runtime = new SimulatedRuntime({
      runtimeId: 'coven-code',
      durationMs: 0,
      sideEffectClass: 'local_write',
      sideEffectBoundProven: false,
      keepsLaunchEvidence: false,
    });
    this.engine = this.build('conformance-engine', { leaseMinutes: 60 });
  }

  get store() {
    return this.tampering.store;
  }

  private build(instanceId: string, extra: Partial<EngineOptions> = {}): Engine {
    const options: EngineOptions = {
      store: this.seams.store?.(this.store) ?? this.store,
      clock: this.clock,
      runtimes: [this.seams.runtime?.(this.runtime) ?? this.runtime],
      instanceId,
      newId: () => `conformance-store-${++this.ids}`,
      delivery: this.delivery,
      ...(this.retention === undefined ? {} : { retention: this.retention }),
      ...extra,
    };
    return new Engine(options, this.crashes.wrap(this.seams.parts ?? ENGINE_PARTS));
  }

  /** The engine's retention from now on (an engine takes its retention when built). */
  useRetention(retention: RetentionOptions): void {
    this.retention = retention;
    this.engine = this.build('conformance-engine', { leaseMinutes: 60 });
  }

  restart(at: string | undefined): Promise<void> {
    this.engine = this.build('conformance-engine-restarted');
    if (at !== undefined) this.clock.set(at);
    return this.pass();
  }

  /**
   * `setLeader`: unavailable, a restarted instance of the engine's id takes the next scheduler generation, so the
   * vector's engine is replaced (its passes refused, its doctor without leadership); available, the vector goes on
   * with a new instance of that id when its engine was replaced.
   */
  async setLeader(available: boolean): Promise<void> {
    const id = this.engine.services.instanceId;
    if (!available) {
      if (this.engine.services.generation === undefined) await acquireGeneration(this.engine.services);
      await acquireGeneration(this.build(id).services);
    } else if (!(await this.engine.leadership()).isLeader) this.engine = this.build(id);
  }

  armCrash(during: string): void {
    this.pendingCrash = during;
    this.processDeaths.push(during);
  }

  /** Consumes the armed crash when it strikes at `phase`. */
  takeCrash(phase: 'command'): boolean {
    if (this.pendingCrash === undefined || CRASH_PHASE[this.pendingCrash] !== phase) return false;
    this.pendingCrash = undefined;
    return true;
  }

  /** One scheduler pass as the vector's `tick`: launch, then look again so the ended session settles. */
  async pass(): Promise<void> {
    const crash = this.pendingCrash === undefined ? undefined : CRASH_PHASE[this.pendingCrash];
    this.pendingCrash = undefined;
    this.lastPassAt = this.clock.now().toISOString();
    if (crash === 'launch-answer') {
      this.runtime.enqueue('crash-during-launch');
      await this.engine.tick();
    } else if (crash !== undefined && crash !== 'command') await this.crashes.tickCrashing(this.engine, crash);
    else {
      await this.engine.tick();
      await this.engine.tick();
    }
  }

  /** Feed positions are global from 0; a vector's cursor counts events, so cursor n is after position n-1. */
  subscribe(afterCursor: number): void {
    this.subscriber = { position: afterCursor - 1 };
  }

  async deliverAll(): Promise<void> {
    const feed = await this.store.read((r) => r.readFeed());
    if (this.subscriber !== undefined) this.subscriber.position = feed.length - 1;
  }

  /** Runs every op of the vector in order. */
  async runOps(apply: (op: Record<string, unknown> & { op: string }) => Promise<void>): Promise<void> {
    const ops = this.vector.input.operations ?? [];
    for (this.opIndex = 0; this.opIndex < ops.length; this.opIndex++) await apply(ops[this.opIndex]!);
  }

  nextOpIsSameInstantRunNow(): boolean {
    const ops = this.vector.input.operations ?? [];
    const [now, next] = [ops[this.opIndex], ops[this.opIndex + 1]];
    return next !== undefined && next.op === 'runNow' && next.at === now?.at;
  }

  async definitionIds(): Promise<string[]> {
    return (await this.store.read((r) => r.list('definition'))).map((r) => r.id);
  }

  async liveOccurrences(): Promise<Array<Record<string, unknown>>> {
    const all = (await this.store.read((r) =>
      r.list<OccurrenceRecord['data']>(KINDS.occurrence),
    )) as OccurrenceRecord[];
    const terminal: ReadonlySet<string> = new Set(OCCURRENCE_TERMINAL_STATES);
    return all.map(renderOccurrence).filter((o) => !terminal.has(String(o.state)));
  }
}
