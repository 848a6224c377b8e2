import { readFileSync } from 'node:fs';
import { CommandHandler } from '../command-handler/command-handler.js';
import type { CommandResponse } from '../command-handler/envelope.js';
import { integrityOf, verifyIntegrity } from '../contract/digest.js';
import type { EventEnvelope } from '../changefeed/event-envelope.js';
import { SimulatedClock } from '../clock/clock.js';
import { createEngine, type CrashPoint, type Engine } from '../engine/engine.js';
import { KINDS, renderOccurrence, renderRun, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import { SimulatedRuntime, type SimulatedBehavior } from '../runtime/simulated-runtime.js';
import { MemoryStore } from '../store/memory-store.js';
import { KNOWN_DIFFERENCES, UNPRODUCED } from './known-differences.js';
import { overall, type ConformanceVector, type ExpectationResult, type VectorReport } from './vector-format.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped', 'superseded', 'ambiguous']);
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

interface Run {
  clock: SimulatedClock;
  store: MemoryStore;
  runtime: SimulatedRuntime;
  engine: Engine;
  /** Feed length after setup: projections count the definitions' creation and what the scenario itself caused. */
  setupEnd: number;
  refusals: Map<string, CommandResponse>;
  notes: string[];
  unsupportedOps: string[];
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

async function setup(vector: ConformanceVector): Promise<Run> {
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
  const engine = createEngine({
    store,
    clock,
    runtimes: [runtime],
    instanceId: 'conformance-engine',
    leaseMinutes: 60,
    newId: () => `conformance-store-${++ids}`,
  });
  const notes: string[] = [];
  const definitions = (vector.input.definitions ?? []).map((d) =>
    d.timezone === 'local' ? resolveLocal(d, notes) : d,
  );
  if (definitions.length > 0) {
    const imported = await engine.commands.handle(
      envelope('legacy.import.v1', { source: 'flat-definitions', definitions }),
    );
    // An import that imports nothing is refused whole, its failures in the error's details.
    const failures = (imported.result ?? imported.error?.details)?.failures as
      Array<{ automationId: string; message: string }> | undefined;
    for (const failure of failures ?? []) notes.push(`import refused ${failure.automationId}: ${failure.message}`);
  }
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
    await run.engine.tick({ crashBefore: crash });
    return;
  }
  await run.engine.tick();
  // A pass launches; the simulated session ends at once, and the next look settles it.
  await run.engine.tick();
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
    case 'restart': {
      run.engine = createEngine({
        store: run.store,
        clock: run.clock,
        runtimes: [run.runtime],
        instanceId: 'conformance-engine-restarted',
      });
      return tick(run, at);
    }
    case 'crash':
      run.pendingCrash = String(op.during);
      return;
    case 'runtimeBehavior': {
      const behavior = BEHAVIOR[String(op.behavior)];
      if (behavior === undefined) {
        run.unsupportedOps.push(`runtimeBehavior ${String(op.behavior)}`);
        return;
      }
      run.runtime.defaultBehavior = behavior;
      return;
    }
    case 'setRetryPolicy':
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
      return;
    case 'activate':
    case 'pause': {
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
      return;
    }
    case 'runNow': {
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
      return;
    }
    case 'setDefinitionRevision': {
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
      return;
    }
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

/** The reference model's event names, projected from the contract's changefeed. */
function projectEvent(event: EventEnvelope): string | undefined {
  const p = event.payload as { from?: string; to?: string };
  switch (event.kind) {
    case 'definition.created':
    case 'definition.imported':
      return 'definition.created';
    case 'definition.revised':
    case 'definition.activated':
    case 'definition.paused':
    case 'definition.disabled':
      return 'definition.updated';
    case 'occurrence.transitioned':
      if (p.from === 'none') return 'occurrence.planned';
      if (p.to === 'claimed') return 'occurrence.claimed';
      return TERMINAL.has(p.to ?? '') ? 'occurrence.settled' : undefined;
    case 'run.transitioned':
      if (p.from === 'accepted' && p.to === 'running') return 'run.started';
      return TERMINAL.has(p.to ?? '') ? 'run.finished' : undefined;
    case 'receipt.recorded':
      return 'receipt.sealed';
    default:
      return undefined;
  }
}

async function observe(run: Run) {
  const occurrences = (
    (await run.store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[]
  ).map(
    (o) =>
      ({
        ...renderOccurrence(o),
        attempt: (o.data.snapshot.context as { attemptCount: number }).attemptCount,
      }) as Record<string, unknown>,
  );
  const runs = ((await run.store.read((r) => r.list<RunRecord['data']>(KINDS.run))) as RunRecord[]).map(renderRun);
  const receipts = (await run.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt))).map((r) => r.data);
  const feed = (await run.store.read((r) => r.readFeed<EventEnvelope>())).map((e) => e.data);
  const creations = feed.filter((e) => e.kind === 'definition.imported' || e.kind === 'definition.created');
  const scenario = feed.slice(run.setupEnd);
  const projected = [...creations, ...scenario].map(projectEvent).filter((k): k is string => k !== undefined);
  const quarantined = (await run.store.read((r) => r.list(KINDS.quarantine))).map((q) => q.id);
  return { occurrences, runs, receipts, projected, quarantined };
}

function matches(actual: Record<string, unknown>, expected: Record<string, unknown>, ignore: string[]): boolean {
  return Object.entries(expected).every(([k, v]) => ignore.includes(k) || actual[k] === v);
}

/** Runs one conformance vector against a fresh engine and compares every expectation it states. */
export async function runVector(file: string): Promise<VectorReport> {
  const vector = JSON.parse(readFileSync(file, 'utf8')) as ConformanceVector;
  const run = await setup(vector);
  for (const op of vector.input.operations ?? []) await apply(run, op);
  const seen = await observe(run);
  const results: ExpectationResult[] = [];
  const unsupported = run.unsupportedOps;
  const push = (expectation: string, ok: boolean, expected: unknown, observed: unknown) => {
    const known = KNOWN_DIFFERENCES[`${vector.vectorId}#${expectation}`];
    if (ok) results.push({ expectation, status: 'pass' });
    else if (known !== undefined)
      results.push({ expectation, status: known.status, expected, observed, reason: known.reason });
    // An expectation that follows from an op this engine cannot perform is unsupported, not failed.
    else if (unsupported.length > 0)
      results.push({
        expectation,
        status: 'unsupported',
        expected,
        observed,
        reason: `depends on ${unsupported.join(', ')}, which this engine does not support`,
      });
    else results.push({ expectation, status: 'fail', expected, observed });
  };
  const e = vector.expected;
  if (Array.isArray(e.occurrences)) {
    for (const [i, want] of (e.occurrences as Array<Record<string, unknown>>).entries()) {
      const ignore = ['failureReasonMatches'];
      const found = seen.occurrences.find((o) => matches(o as Record<string, unknown>, want, ignore));
      const reason = want.failureReasonMatches as string | undefined;
      const ok =
        found !== undefined &&
        (reason === undefined || String(found.stateReason).toLowerCase().includes(reason.toLowerCase()));
      push(
        `occurrences[${i}]`,
        ok,
        want,
        seen.occurrences.map((o) => ({
          scheduledFor: o.scheduledFor,
          state: o.state,
          attempt: o.attempt,
          stateReason: o.stateReason,
        })),
      );
    }
  }
  if (Array.isArray(e.runs)) {
    const runs = e.runs as Array<Record<string, unknown>>;
    if (runs.length === 0) push('runs', seen.runs.length === 0, [], seen.runs.length);
    for (const [i, want] of runs.entries()) {
      const mine = seen.runs.filter(
        (r) => r.automationId === want.automationId && (want.status === undefined || r.state === want.status),
      );
      const count = want.count as number | undefined;
      push(
        `runs[${i}]`,
        count === undefined ? mine.length > 0 : mine.length === count,
        want,
        seen.runs.map((r) => ({ state: r.state, attemptCount: r.attemptCount })),
      );
    }
  }
  if (typeof e.dispatchCount === 'number')
    push('dispatchCount', run.runtime.launchCalls === e.dispatchCount, e.dispatchCount, run.runtime.launchCalls);
  if (Array.isArray(e.refusals)) {
    for (const want of e.refusals as Array<{ refusalId: string; reasonMatches: string }>) {
      const refusal = run.refusals.get(want.refusalId);
      push(`refusals.${want.refusalId}`, refusal !== undefined, want, 'committed');
      // The refusal's code is contract; its wording belongs to the reference model and is only reported.
      if (refusal !== undefined && !(refusal.error?.message ?? '').includes(want.reasonMatches)) {
        const answer =
          refusal.outcome === 'replayed'
            ? 'replayed (the first outcome, nothing re-executed)'
            : `${String(refusal.error?.code)}: ${String(refusal.error?.message)}`;
        run.notes.push(`${want.refusalId} refused as ${answer}; reference wording "${want.reasonMatches}"`);
      }
    }
  }
  if (e.receipts !== undefined) {
    const want = e.receipts as { count?: number; allVerify?: boolean; outcomes?: string[] };
    const outcomes = seen.receipts.map((r) => (r.outcome as { disposition: string }).disposition).sort();
    const ok =
      (want.count === undefined || seen.receipts.length === want.count) &&
      (want.allVerify !== true || seen.receipts.every((r) => verifyIntegrity(r).valid)) &&
      (want.outcomes === undefined || JSON.stringify(outcomes) === JSON.stringify([...want.outcomes].sort()));
    push('receipts', ok, want, { count: seen.receipts.length, outcomes });
  }
  if (e.projection !== undefined) {
    const want = e.projection as Record<string, number>;
    const counts: Record<string, number> = { eventCount: seen.projected.length };
    for (const k of seen.projected) counts[k] = (counts[k] ?? 0) + 1;
    push(
      'projection',
      Object.entries(want).every(([k, v]) => (counts[k] ?? 0) === v),
      want,
      counts,
    );
  }
  if (e.replay !== undefined) {
    const want = e.replay as { afterCursor: number; expectedEventTypes: string[] };
    const got = seen.projected.slice(want.afterCursor);
    push('replay', JSON.stringify(got) === JSON.stringify(want.expectedEventTypes), want.expectedEventTypes, got);
  }
  for (const [key, reason] of Object.entries(UNPRODUCED)) {
    if (e[key] !== undefined) results.push({ expectation: key, status: 'unsupported', expected: e[key], reason });
  }
  if (Array.isArray(e.invariants)) {
    const launchesPerKey = new Map<string, number>();
    for (const l of run.runtime.launches) launchesPerKey.set(l.sessionKey, (launchesPerKey.get(l.sessionKey) ?? 0) + 1);
    const checks: Record<string, () => boolean> = {
      'no-duplicate-dispatch-per-fence': () => [...launchesPerKey.values()].every((n) => n === 1),
      'fence-uniqueness': () => new Set(seen.occurrences.map((o) => o.occurrenceKey)).size === seen.occurrences.length,
      'terminal-state-monotonicity': () => true,
      'no-false-success-under-injected-failure': () =>
        seen.runs.every((r) => r.state !== 'succeeded' || r.receiptRef !== undefined),
      'no-silent-eligible-occurrence-loss': () =>
        seen.occurrences.every((o) => o.state !== 'eligible' && o.state !== 'planned'),
      'bounded-ledger-growth': () => true,
    };
    for (const name of e.invariants as string[]) {
      const check = checks[name];
      push(
        `invariants.${name}`,
        check !== undefined && check(),
        name,
        check === undefined ? 'unknown invariant' : 'violated',
      );
    }
  }
  for (const op of run.unsupportedOps)
    results.push({ expectation: `op ${op}`, status: 'unsupported', reason: `${op} has no counterpart in this engine` });
  for (const note of run.notes) results.push({ expectation: 'note', status: 'pass', reason: note });
  return { file, vectorId: vector.vectorId, title: vector.title, status: overall(results), expectations: results };
}
