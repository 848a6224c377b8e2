import { DefinitionState } from '../../../machines/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { integrityOf } from '../../contract/digest.js';
import { SimulatedClock } from '../../clock/clock.js';
import { Engine } from '../../engine/engine.js';
import { CrashSwitch, type CrashPoint } from '../crash-switch.js';
import type { EngineFaults } from './faults.js';
import { SimulatedRuntime, type SimulatedBehavior } from '../../runtime/simulated-runtime.js';
import { JsonFileStore } from '../../store/json/index.js';
import { SqliteStore } from '../../store/sqlite/index.js';
import { MemoryStore } from '../../store/memory-store.js';
import type { Store, StoreReader } from '../../store/store.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { RetentionOptions } from '../../retention/policy.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { captureHistory, type History, type PassMark } from './history.js';
import { PLAN_STEAL_AFTER_MS } from '../../scheduler/planning.js';
import { INVARIANTS } from './checks.js';
import { ProbeRuntime } from './probe-runtime.js';
import { UnsealedStore } from './unsealed-store.js';
import { ScheduledStore } from './scheduled-store.js';
import { ScratchPostgres } from './scratch-postgres.js';
import { faultyParts } from './faulty-engine.js';
import { FaultyRuntime, type RuntimeFaults } from './faulty-runtime.js';
import {
  FaultyStore,
  RETRY_REWRITES_PRIOR,
  REVISE_MOVES_LIVE_OCCURRENCES,
  LIVE_WORK_READS_EMPTY,
  RUN_ACCEPTED_TWICE,
  TOMBSTONES_READ_ACTIVE,
  type StoreFault,
} from './faulty-store.js';
import type fc from 'fast-check';

export type StoreKind = 'memory' | 'json' | 'sqlite' | 'postgres' | 'unsealed-memory';

/** Engines a world on the postgres store runs, each on a store of its own over one schema. */
export const POSTGRES_WORLD_ENGINES = 3;

/** A violated invariant, with the problems found and the step that revealed them. */
export class InvariantViolation extends Error {
  /** Every invariant the step violated, with its problems; `invariant` is the first. */
  constructor(
    readonly violations: Map<string, string[]>,
    readonly step: string,
  ) {
    const [first] = violations;
    const also = violations.size > 1 ? ` (also: ${[...violations.keys()].slice(1).join(', ')})` : '';
    super(`${first![0]} violated after ${step}: ${first![1].slice(0, 3).join('; ')}${also}`);
    this.name = 'InvariantViolation';
  }

  get invariant(): string {
    return [...this.violations.keys()][0]!;
  }
}

/** The store faults, each a wrapper of the engines' store port. */
const STORE_FAULTS: Partial<Record<keyof EngineFaults, StoreFault>> = {
  acceptFenceTwice: RUN_ACCEPTED_TWICE,
  rewritePriorAttempt: RETRY_REWRITES_PRIOR,
  planTombstoned: TOMBSTONES_READ_ACTIVE,
  rewriteHistoricRevision: REVISE_MOVES_LIVE_OCCURRENCES,
  ignoreLiveWork: LIVE_WORK_READS_EMPTY,
};

const RUNTIME_FAULTS = [
  'successWithoutEvidence',
  'bindSecondSession',
  'ackCancelWithoutRuntime',
  'resendUnconfirmedLaunches',
] as const satisfies ReadonlyArray<keyof RuntimeFaults>;

/** The engines' view of the world's store: wrapped by every store fault switched on. */
function engineStore(store: Store, faults: Partial<EngineFaults>): Store {
  return Object.entries(STORE_FAULTS).reduce<Store>(
    (inner, [fault, wrapper]) =>
      faults[fault as keyof EngineFaults] === true ? new FaultyStore(inner, wrapper) : inner,
    store,
  );
}

export const AUTOMATIONS = ['alpha', 'beta'] as const;
const START = '2026-03-02T08:00:00.000Z';

/** Key in a world's `checked` map: occurrences its engines compacted (retention properties assert it grew). */
export const COMPACTIONS = 'retention:compacted-occurrences';

/** Key in a world's `checked` map: steps that lost a race with another engine's commit (rolled back whole). */
export const CONTENDED = 'engines:contended-steps';

/** The feed position after the last commit (the newest entry is never trimmed, so this is exact). */
async function feedEnd(reader: StoreReader): Promise<number> {
  const last = (await reader.readFeed()).at(-1);
  return last === undefined ? 0 : last.position + 1;
}

/**
 * One engine world under test: a store, a simulated clock and runtime (probed), up to two engines, and
 * the invariant checks run after every step against the full history.
 */
export class World {
  readonly clock = new SimulatedClock(START);
  readonly runtime = new SimulatedRuntime({
    runtimeId: 'coven-code',
    durationMs: 5 * 60_000,
    sideEffectClass: 'local_write',
    sideEffectBoundProven: false,
  });
  readonly probe: ProbeRuntime;
  /**
   * What the engines are given: their stores (one shared store, or one each over one database) and the probed
   * runtime, each wrapped by the faults switched on.
   */
  private readonly ports: { stores: Store[]; runtime: Runtime };
  readonly engines: Engine[] = [];
  /** Each engine's crash switch: a crash stops only the pass of the engine it is aimed at. */
  private readonly crashes = new WeakMap<Engine, CrashSwitch>();
  readonly passes: PassMark[] = [];
  readonly usedKeys: string[] = [];
  private previous: History | undefined;
  private keyCounter = 0;
  private steps = 0;

  private constructor(
    readonly store: Store,
    private readonly faults: Partial<EngineFaults>,
    readonly checked: Map<string, number>,
    private readonly dir: string | undefined,
    /**
     * Retention for the world's engines; off unless a property exercises it (the checks then read retained history).
     */
    private readonly retention: RetentionOptions | false = false,
    /** A store per engine over the same data (PostgreSQL); by default both engines share `store`. */
    engineStores: Store[] = [store, store],
    private readonly scratch?: ScratchPostgres,
  ) {
    this.probe = new ProbeRuntime(this.runtime, () => store.read(feedEnd));
    this.ports = {
      stores: engineStores.map((s) => engineStore(s, faults)),
      runtime: RUNTIME_FAULTS.some((f) => faults[f] === true) ? new FaultyRuntime(this.probe, faults) : this.probe,
    };
    this.ports.stores.forEach((_, i) => this.engines.push(this.newEngine(`engine-${'abcdefgh'[i]}`, i)));
  }

  /** A world whose store transactions are ordered by a fast-check scheduler. */
  static scheduled(scheduler: fc.Scheduler, checked: Map<string, number>): World {
    return new World(new ScheduledStore(new MemoryStore(), scheduler), {}, checked, undefined);
  }

  static async create(
    kind: StoreKind,
    faults: Partial<EngineFaults>,
    checked: Map<string, number>,
    retention: RetentionOptions | false = false,
    options: { postgresUrl?: string } = {},
  ): Promise<World> {
    if (kind === 'postgres') {
      const scratch = ScratchPostgres.create(options.postgresUrl);
      const stores: Store[] = [];
      for (let i = 0; i < POSTGRES_WORLD_ENGINES; i++) stores.push(await scratch.open());
      return new World(stores[0]!, faults, checked, undefined, retention, stores, scratch);
    }
    if (kind === 'json') {
      const dir = mkdtempSync(join(tmpdir(), 'coven-invariants-'));
      return new World(await JsonFileStore.open(join(dir, 'store.json')), faults, checked, dir, retention);
    }
    if (kind === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'coven-invariants-'));
      return new World(await SqliteStore.open(join(dir, 'store.sqlite')), faults, checked, dir, retention);
    }
    return new World(
      kind === 'unsealed-memory' ? new UnsealedStore(new MemoryStore()) : new MemoryStore(),
      faults,
      checked,
      undefined,
      retention,
    );
  }

  async dispose(): Promise<void> {
    for (const e of this.engines) await e.stop();
    if (this.scratch !== undefined) await this.scratch.drop();
    else await this.store.close();
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
  }

  private newEngine(instanceId: string, index: number): Engine {
    let ids = 0;
    const crashes = new CrashSwitch();
    const engine = new Engine(
      {
        store: this.ports.stores[index]!,
        clock: this.clock,
        runtimes: [this.ports.runtime],
        instanceId,
        newId: () => `${instanceId}-store-${++ids}`,
        retention: this.retention,
      },
      crashes.wrap(faultyParts(this.faults)),
    );
    this.crashes.set(engine, crashes);
    return engine;
  }

  nextKey(tag: string): string {
    const key = `inv-${tag}-${String(++this.keyCounter).padStart(5, '0')}`;
    this.usedKeys.push(key);
    return key;
  }

  async command(
    name: string,
    payload: Record<string, unknown>,
    extra: { expectedRevision?: number; adoptionKey?: string; engine?: number } = {},
  ): Promise<CommandResponse> {
    return this.engines[extra.engine ?? 0]!.commands.handle({
      schemaVersion: 'coven.automations.v1',
      command: name,
      adoptionKey: extra.adoptionKey ?? this.nextKey(name.split('.')[1] ?? 'cmd'),
      ...(extra.expectedRevision === undefined ? {} : { expectedRevision: extra.expectedRevision }),
      origin: { principal: { principalId: 'invariant-suite' }, channel: 'sdk' },
      intent: { statement: `invariant suite: ${name}` },
      payload,
    });
  }

  async revision(automationId: string): Promise<number | undefined> {
    const r = await this.store.read((reader) =>
      reader.get<{ attributes: { definition: { revision: number } } }>('definition', automationId),
    );
    return r?.data.attributes.definition.revision;
  }

  /** Creates, revises and activates one automation; the retry policy decides how failures behave. */
  async define(automationId: string, maxAttempts: number, hours: number[]): Promise<void> {
    const body = (revision: number, lifecycleState: string) => {
      const b: Record<string, unknown> = {
        schemaVersion: 'coven.automations.v1',
        automationId,
        revision,
        lifecycleState,
        display: { name: automationId },
        trigger: {
          variant: 'schedule',
          version: 1,
          schedule: { rrule: `FREQ=DAILY;BYHOUR=${hours.join(',')}`, timezone: 'utc' },
        },
        conditions: [],
        action: { variant: 'familiarInvocation', version: 1, prompt: `run ${automationId}` },
        binding: {
          familiarBindingPolicy: 'exact',
          familiarId: 'charm',
          authority: { approvalPolicyRef: 'policy://invariants' },
        },
        runtimeRequirements: { runtimeId: 'coven-code', capabilities: [] },
        policies: {
          timeout: { perRunMinutes: 45 },
          retry: {
            maxAttempts,
            backoffPolicy: 'fixed',
            backoffSeconds: 60,
            retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
          },
          concurrency: { overlap: 'forbid' },
          misfire: { disposition: 'latest' },
          retention: { occurrenceHistory: { classification: 'standard' } },
        },
        provenance: { createdBy: { principalId: 'invariant-suite' } },
      };
      return { ...b, integrity: integrityOf(b) };
    };
    if ((await this.revision(automationId)) !== undefined) return;
    await this.command('definition.create.v1', { definition: body(1, 'draft') });
    await this.command('definition.revise.v1', { definition: body(2, 'paused') }, { expectedRevision: 1 });
    await this.command('definition.activate.v1', { automationId }, { expectedRevision: 2 });
  }

  async revise(automationId: string, hour: number): Promise<CommandResponse | undefined> {
    const got = await this.command('definition.get.v1', { automationId });
    if (got.outcome !== 'committed') return undefined;
    const current = got.result!.definition as Record<string, unknown> & { revision: number };
    const { integrity: _old, ...rest } = structuredClone(current);
    const body: Record<string, unknown> = { ...rest, revision: current.revision + 1 };
    (body.trigger as { schedule: { rrule: string } }).schedule.rrule = `FREQ=DAILY;BYHOUR=${hour}`;
    if (body.lifecycleState === DefinitionState.draft || body.lifecycleState === DefinitionState.invalid)
      body.lifecycleState = 'paused';
    return this.command(
      'definition.revise.v1',
      { definition: { ...body, integrity: integrityOf(body) } },
      { expectedRevision: current.revision },
    );
  }

  async tick(engine = 0, crashBefore?: CrashPoint): Promise<void> {
    const end = await this.store.read(feedEnd);
    const running = this.engines[engine]!;
    const report =
      crashBefore === undefined
        ? await running.tick()
        : await this.crashes.get(running)!.tickCrashing(running, crashBefore);
    // Counted beside the checks, so a retention property can show it compacted anything at all.
    if (report.compacted > 0) this.checked.set(COMPACTIONS, (this.checked.get(COMPACTIONS) ?? 0) + report.compacted);
    if (crashBefore === undefined) this.passes.push(this.passMark(running, end));
  }

  /**
   * Every engine runs a pass at once: on PostgreSQL they race for the same occurrences through their own
   * connections, as engine processes do; on one shared store their transactions interleave in its queue.
   */
  async tickTogether(): Promise<void> {
    const end = await this.store.read(feedEnd);
    const reports = await Promise.all(this.engines.map((e) => e.tick()));
    for (const [i, report] of reports.entries()) {
      this.checked.set(CONTENDED, (this.checked.get(CONTENDED) ?? 0) + report.contended);
      if (report.compacted > 0) this.checked.set(COMPACTIONS, (this.checked.get(COMPACTIONS) ?? 0) + report.compacted);
      this.passes.push(this.passMark(this.engines[i]!, end));
    }
  }

  /** A pass of `engine` that began at feed position `feedEnd`, now (see {@link PassMark}). */
  private passMark(engine: Engine, feedEnd: number): PassMark {
    const shared = engine.services.store.sharedByEngines === true;
    return { at: this.clock.now().toISOString(), feedEnd, planGraceMs: shared ? PLAN_STEAL_AFTER_MS : 0 };
  }

  /** A process dies mid-pass and a new engine takes its place on the same store and runtime. */
  async crashAndRestart(point: CrashPoint): Promise<void> {
    await this.tick(0, point);
    await this.engines[0]!.stop();
    this.engines[0] = this.newEngine(`engine-a-${this.steps}`, 0);
  }

  behave(behavior: SimulatedBehavior): void {
    this.runtime.enqueue(behavior);
  }

  /** Runs every invariant over the whole history; throws the first violation with its name. */
  async verify(step: string): Promise<void> {
    this.steps += 1;
    const history = await captureHistory(this.store, this.probe.log, this.clock.now().toISOString(), this.passes);
    const violations = new Map<string, string[]>();
    for (const invariant of INVARIANTS) {
      this.checked.set(invariant.id, (this.checked.get(invariant.id) ?? 0) + 1);
      const problems = invariant.check(history, this.previous);
      if (problems.length > 0) violations.set(invariant.id, problems);
    }
    if (violations.size > 0) throw new InvariantViolation(violations, step);
    this.previous = history;
  }
}
