import { readFileSync } from 'node:fs';
import type { CommandHandler } from '../../command-handler/command-handler.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { integrityOf } from '../../contract/digest.js';
import { SimulatedClock } from '../../clock/clock.js';
import { Engine, type EngineOptions } from '../../engine/engine.js';
import { ENGINE_PARTS } from '../../engine/parts.js';
import { CrashSwitch, type CrashPoint } from '../crash-switch.js';
import { SimulatedRuntime, type SimulatedBehavior } from '../../runtime/simulated-runtime.js';
import { MemoryStore } from '../../store/memory-store.js';
import { judgeVector, type JudgedRun } from './vector-expectations.js';
import { overall, type ConformanceVector, type VectorReport } from './vector-format.js';

const CRASH_PHASE: Record<string, CrashPoint | 'launch-answer' | 'command'> = {
  plan: 'plan',
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
const BEHAVIOR: Record<string, SimulatedBehavior> = {
  available: 'succeed',
  unavailable: 'unavailable',
  timeout: 'hang',
  'lost-after-side-effect': 'lost-after-side-effect',
  'duplicate-response': 'duplicate-response',
  'out-of-order-response': 'out-of-order-response',
};
/** Ops this engine has no counterpart for (approvals, authority, delivery, retention, erasure, leadership). */
const UNSUPPORTED_OPS = new Set([
  'grantApproval',
  'expireApprovals',
  'revokeFamiliar',
  'setAuthority',
  'setRuntimeCapabilities',
  'deliveryBehavior',
  'tamperReceipt',
  'redactReceipts',
  'erase',
  'setRetention',
  'setLeader',
]);

let keyCounter = 0;
const nextKey = (tag: string) => `conformance-${tag}-${String(++keyCounter).padStart(6, '0')}`;

interface Run extends JudgedRun {
  clock: SimulatedClock;
  engine: Engine;
  pendingCrash: string | undefined;
}

function envelope(
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

async function currentDefinition(handler: CommandHandler, automationId: string): Promise<Record<string, unknown>> {
  const got = await handler.handle(envelope('definition.get.v1', { automationId }));
  return got.result!.definition as Record<string, unknown>;
}

/** Commits a new revision of a definition with `change` applied to its body. */
async function reviseWith(
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
      { expectedRevision: revision },
    ),
  );
}

/** A fresh engine on a memory store and a simulated clock starting where the vector's virtual time does. */
function freshEngine(vector: ConformanceVector) {
  const start =
    vector.virtualTime?.start ??
    (vector.input.operations?.find((o) => typeof o.at === 'string')?.at as string | undefined) ??
    '2026-03-01T00:00:00.000Z';
  const clock = new SimulatedClock(start);
  const store = new MemoryStore();
  // Upstream's model: an hour's lease, and a runtime that cannot say what became of a launch whose answer was lost.
  const runtime = new SimulatedRuntime({
    runtimeId: 'coven-code',
    durationMs: 0,
    sideEffectClass: 'local_write',
    sideEffectBoundProven: false,
    keepsLaunchEvidence: false,
  });
  let ids = 0;
  const engine = crashableEngine({
    store,
    clock,
    runtimes: [runtime],
    instanceId: 'conformance-engine',
    leaseMinutes: 60,
    newId: () => `conformance-store-${++ids}`,
  });
  return { clock, store, runtime, engine };
}

/** Each engine's crash switch: a vector's `crash` op stops that engine's next pass at the named phase. */
const CRASHES = new WeakMap<Engine, CrashSwitch>();

function crashableEngine(options: EngineOptions): Engine {
  const crashes = new CrashSwitch();
  const engine = new Engine(options, crashes.wrap(ENGINE_PARTS));
  CRASHES.set(engine, crashes);
  return engine;
}

type Definitions = NonNullable<ConformanceVector['input']['definitions']>;

/** Imports the vector's flat definitions; refusals become notes. */
async function importDefinitions(engine: Engine, definitions: Definitions, notes: string[]): Promise<void> {
  if (definitions.length > 0) {
    const imported = await engine.commands.handle(
      envelope('legacy.import.v1', { source: 'flat-definitions', definitions }),
    );
    // An import that imports nothing is refused whole, its failures in the error's details.
    const failures = (imported.result ?? imported.error?.details)?.failures as
      Array<{ automationId: string; message: string }> | undefined;
    for (const failure of failures ?? []) notes.push(`import refused ${failure.automationId}: ${failure.message}`);
  }
}

/** Brings each imported definition to the vector's status through the contract's own transitions. */
async function reachStatuses(engine: Engine, definitions: Definitions, notes: string[]): Promise<void> {
  for (const d of definitions) {
    if (d.status === 'DISABLED') continue;
    // Imports land in draft; the vector's status is reached through the contract's own transitions. A paused
    // definition must bind its familiar exactly; flat vectors that name none get a runner familiar.
    const revised = await reviseWith(
      engine.commands,
      d.id,
      (body) => {
        const binding = body.binding as { familiarId?: string };
        if (binding.familiarId === undefined) {
          binding.familiarId = 'conformance-familiar';
          notes.push(`${d.id} names no familiar: bound to "conformance-familiar" to leave draft`);
        }
      },
      'paused',
    );
    if (revised.outcome !== 'committed') continue;
    if (d.status === 'ACTIVE')
      await engine.commands.handle(
        envelope('definition.activate.v1', { automationId: d.id }, { expectedRevision: revised.revision! }),
      );
  }
}

async function setup(vector: ConformanceVector): Promise<Run> {
  const { clock, store, runtime, engine } = freshEngine(vector);
  const notes: string[] = [];
  const definitions = (vector.input.definitions ?? []).map((d) =>
    d.timezone === 'local' ? resolveLocal(d, notes) : d,
  );
  await importDefinitions(engine, definitions, notes);
  await reachStatuses(engine, definitions, notes);
  const setupEnd = (await store.read((r) => r.readFeed())).length;
  return {
    clock,
    store,
    runtime,
    engine,
    setupEnd,
    refusals: new Map(),
    notes,
    unsupportedOps: [],
    pendingCrash: undefined,
  };
}

/** `local` is accepted only at compatibility entry points and resolved to this host's IANA zone before storage. */
function resolveLocal(definition: Record<string, unknown> & { id: string; status: string }, notes: string[]) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const resolved = zone === 'UTC' || zone === 'Etc/UTC' ? 'utc' : zone;
  notes.push(`timezone "local" of ${definition.id} resolved to ${resolved} at import (host zone)`);
  return { ...definition, timezone: resolved };
}

async function tick(run: Run, at?: unknown): Promise<void> {
  if (typeof at === 'string') run.clock.set(at);
  const crash = run.pendingCrash === undefined ? undefined : CRASH_PHASE[run.pendingCrash];
  run.pendingCrash = undefined;
  if (crash === 'launch-answer') {
    run.runtime.enqueue('crash-during-launch');
    await run.engine.tick();
    return;
  }
  if (crash !== undefined && crash !== 'command') {
    await CRASHES.get(run.engine)!.tickCrashing(run.engine, crash);
    return;
  }
  await run.engine.tick();
  // A pass launches; the simulated session ends at once, and the next look settles it.
  await run.engine.tick();
}

function setBehavior(run: Run, op: Record<string, unknown>): void {
  const behavior = BEHAVIOR[String(op.behavior)];
  if (behavior === undefined) {
    run.unsupportedOps.push(`runtimeBehavior ${String(op.behavior)}`);
    return;
  }
  run.runtime.defaultBehavior = behavior;
}

async function setRetryPolicy(run: Run, op: Record<string, unknown>): Promise<void> {
  for (const id of await definitionIds(run)) {
    await reviseWith(run.engine.commands, id, (body) => {
      const policies = body.policies as Record<string, unknown>;
      const seconds = Number(op.backoffSeconds ?? 0);
      policies.retry = {
        maxAttempts: Number(op.maxAttempts ?? 1),
        backoffPolicy: seconds > 0 ? 'fixed' : 'none',
        ...(seconds > 0 ? { backoffSeconds: seconds } : {}),
        retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
      };
    });
  }
}

async function changeLifecycle(run: Run, op: Record<string, unknown> & { op: string }, at?: string): Promise<void> {
  if (at !== undefined) run.clock.set(at);
  const current = await currentDefinition(run.engine.commands, String(op.automationId));
  const r = await run.engine.commands.handle(
    envelope(
      `definition.${op.op}.v1`,
      { automationId: op.automationId },
      { expectedRevision: current.revision as number },
    ),
  );
  if (r.outcome === 'rejected') run.refusals.set(String(op.label ?? op.op), r);
}

async function runNow(run: Run, op: Record<string, unknown>, at?: string): Promise<void> {
  if (at !== undefined) run.clock.set(at);
  if (run.pendingCrash !== undefined && CRASH_PHASE[run.pendingCrash] === 'command') {
    run.pendingCrash = undefined;
    run.notes.push('runNow crashed before its commit: nothing of it is durable');
    return;
  }
  const r = await run.engine.commands.handle(
    envelope(
      'occurrence.runNow.v1',
      { automationId: op.automationId },
      { adoptionKey: contractKey(String(op.adoptionKey), run.notes) },
    ),
  );
  if (r.outcome !== 'committed') run.refusals.set(String(op.label ?? op.adoptionKey), r);
  await run.engine.tick();
}

async function setDefinitionRevision(run: Run, op: Record<string, unknown>): Promise<void> {
  const id = String(op.automationId);
  const current = await currentDefinition(run.engine.commands, id);
  const target = Number(op.revision);
  const { integrity: _i, ...body } = structuredClone(current);
  body.revision = target;
  const r = await run.engine.commands.handle(
    envelope(
      'definition.revise.v1',
      { definition: { ...body, integrity: integrityOf(body) } },
      { expectedRevision: Math.max(1, target - 1) },
    ),
  );
  if (r.outcome === 'rejected') run.refusals.set(String(op.label), r);
}

async function apply(run: Run, op: Record<string, unknown> & { op: string }): Promise<void> {
  const at = typeof op.at === 'string' ? op.at : undefined;
  switch (op.op) {
    case 'tick':
      return tick(run, at);
    case 'advance':
    case 'suspend':
    case 'resume':
      if (at !== undefined) run.clock.set(at);
      return;
    case 'setHostTimezone':
      run.notes.push(`host timezone set to ${String(op.hostTimezone)}: durable zones are never reinterpreted`);
      return;
    case 'restart':
      run.engine = crashableEngine({
        store: run.store,
        clock: run.clock,
        runtimes: [run.runtime],
        instanceId: 'conformance-engine-restarted',
      });
      return tick(run, at);
    case 'crash':
      run.pendingCrash = String(op.during);
      return;
    case 'runtimeBehavior':
      return setBehavior(run, op);
    case 'setRetryPolicy':
      return setRetryPolicy(run, op);
    case 'activate':
    case 'pause':
      return changeLifecycle(run, op, at);
    case 'runNow':
      return runNow(run, op, at);
    case 'setDefinitionRevision':
      return setDefinitionRevision(run, op);
    case 'subscribe':
    case 'deliver':
      return;
    default:
      if (UNSUPPORTED_OPS.has(op.op)) run.unsupportedOps.push(op.op);
      else run.unsupportedOps.push(`unknown op ${op.op}`);
  }
}

/** Vector keys like "a" break the contract's key syntax (8–200 chars); they are namespaced, consistently. */
function contractKey(key: string, notes: string[]): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._:-]{7,199}$/.test(key)) return key;
  const mapped = `conformance-key-${key}`.replace(/[^A-Za-z0-9._:-]/g, '-');
  notes.push(`adoption key "${key}" is not a contract key (8-200 chars); sent as "${mapped}"`);
  return mapped;
}

async function definitionIds(run: Run): Promise<string[]> {
  return (await run.store.read((r) => r.list('definition'))).map((r) => r.id);
}

/** Runs one conformance vector against a fresh engine and compares every expectation it states. */
export async function runVector(file: string): Promise<VectorReport> {
  const vector = JSON.parse(readFileSync(file, 'utf8')) as ConformanceVector;
  const run = await setup(vector);
  for (const op of vector.input.operations ?? []) await apply(run, op);
  const results = await judgeVector(vector, run);
  return { file, vectorId: vector.vectorId, title: vector.title, status: overall(results), expectations: results };
}
