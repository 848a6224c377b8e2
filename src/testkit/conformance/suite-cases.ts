import type { CommandResponse } from '../../command-handler/envelope.js';
import { integrityOf } from '../../contract/digest.js';
import { SimulatedClock } from '../../clock/clock.js';
import { KINDS } from '../../domain/records.js';
import { Engine } from '../../engine/engine.js';
import { SimulatedRuntime } from '../../runtime/simulated-runtime.js';
import { MemoryStore } from '../../store/memory-store.js';
import type { Situation } from './contract-rules.js';
import type { ExpectationResult } from './vector-format.js';
import { currentDefinition, envelope } from './vector-session.js';

export type SuiteCase = Record<string, unknown> & { caseId: string; expected?: Record<string, unknown> };
/** An interpreter runs one case of its suite and judges it; `judge` decides each mismatch (rule or fail). */
export type CaseRunner = (c: SuiteCase, judge: Judge) => Promise<void>;
/** `seen` is what the engine held when judged, for the contract rules that decide a mismatch by its situation. */
export type Judge = (
  expectation: string,
  ok: boolean,
  expected: unknown,
  observed: unknown,
  seen?: Partial<Situation['seen']>,
) => void;
export type { ExpectationResult };

/** A fresh engine on a memory store for one case; `restart` reopens the same store in a new engine. */
export function caseWorld(start = '2026-09-01T08:00:00.000Z') {
  const store = new MemoryStore();
  const clock = new SimulatedClock(start);
  // The runtime the vectors' definitions name, so activation can validate the runtime requirement.
  const runtimes = [new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 0 })];
  const world = {
    store,
    clock,
    engine: new Engine({ store, clock, runtimes, instanceId: 'conformance-suite' }),
    send: (e: Record<string, unknown>): Promise<CommandResponse> => world.engine.commands.handle(e),
    restart: () => {
      world.engine = new Engine({ store, clock, runtimes, instanceId: 'conformance-suite-restarted' });
    },
    feedLength: async () => (await store.read((r) => r.readFeed())).length,
  };
  return world;
}

/** command-envelope-outcomes: each step sends an envelope (or restarts) and states the answer expected. */
export const commandEnvelopeOutcomes: CaseRunner = async (c, judge) => {
  const world = caseWorld();
  const steps = c.steps as Array<{
    kind: string;
    envelope?: Record<string, unknown>;
    expect?: Record<string, unknown>;
  }>;
  for (const [i, step] of steps.entries()) {
    if (step.kind === 'restart') {
      world.restart();
      continue;
    }
    const want = step.expect ?? {};
    const before = await world.feedLength();
    const r = await world.send(step.envelope!);
    const name = `steps[${i}] ${String(step.envelope!.command)}`;
    judge(`${name}.outcome`, r.outcome === want.outcome, want.outcome, r.outcome);
    if (want.errorCode !== undefined)
      judge(`${name}.errorCode`, r.error?.code === want.errorCode, want.errorCode, r.error?.code);
    if (typeof want.revision === 'number')
      judge(`${name}.revision`, r.revision === want.revision, want.revision, r.revision);
    // A refusal leaves definitions, events and execution unchanged (this engine keeps no rejection ledger).
    if (want.writes !== undefined) {
      const after = await world.feedLength();
      judge(
        `${name}.writes`,
        after === before,
        `no definition or event (${String(want.writes)})`,
        `${after - before} events`,
      );
    }
  }
};

/** command-adoption-idempotency: a create, its exact replay, and a conflicting replay under the same key. */
export const commandAdoptionIdempotency: CaseRunner = async (c, judge) => {
  const world = caseWorld();
  const want = c.expected!;
  const create = (definition: unknown) =>
    envelope(
      'legacy.import.v1',
      { source: 'flat-definitions', definitions: [definition] },
      {
        adoptionKey: String(c.adoptionKey),
      },
    );
  const first = await world.send(create(c.definition));
  const eventsAfterFirst = await world.feedLength();
  const replay = await world.send(create(c.definition));
  const conflict = await world.send(create(c.conflictingDefinition));
  judge('firstOutcome', first.outcome === want.firstOutcome, want.firstOutcome, first.outcome);
  judge('exactReplayOutcome', replay.outcome === want.exactReplayOutcome, want.exactReplayOutcome, replay.outcome);
  judge(
    'exactReplayResultPreserved',
    JSON.stringify(replay.result) === JSON.stringify(first.result),
    true,
    replay.result,
  );
  judge(
    'conflictingReplayOutcome',
    conflict.outcome === want.conflictingReplayOutcome,
    want.conflictingReplayOutcome,
    conflict.outcome,
  );
  judge('conflictCode', conflict.error?.code === want.conflictCode, want.conflictCode, conflict.error?.code);
  const definitions = await world.store.read((r) => r.list('definition'));
  judge('definitionRows', definitions.length === want.definitionRows, want.definitionRows, definitions.length);
  const events = await world.feedLength();
  judge('exactReplayEventPreserved', events === eventsAfterFirst, eventsAfterFirst, events);
};

/** The rich body legacy.import.v1 makes of a flat definition (read back from a scratch store). */
async function richBodyOf(flat: Record<string, unknown>): Promise<Record<string, unknown>> {
  const scratch = caseWorld();
  await scratch.send(envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [flat] }));
  const { integrity: _i, ...body } = await currentDefinition(scratch.engine.commands, String(flat.id));
  return body;
}

/**
 * capability-negotiation: the flat definition, its variant fields (`trigger`) carried onto the rich body, through
 * definition.create.v1; supported when created, unsupported when refused as CAPABILITY_UNSUPPORTED.
 */
export const capabilityNegotiation: CaseRunner = async (c, judge) => {
  const { trigger, ...flat } = c.definition as Record<string, unknown>;
  // `local` resolves to the host zone at import; this probe is about variants, so it runs in utc.
  if (flat.timezone === 'local') flat.timezone = 'utc';
  const body: Record<string, unknown> = { ...(await richBodyOf(flat)), revision: 1, lifecycleState: 'draft' };
  if (trigger !== undefined) body.trigger = trigger;
  const r = await caseWorld().send(
    envelope('definition.create.v1', { definition: { ...body, integrity: integrityOf(body) } }),
  );
  const code = r.error?.code;
  const outcome = r.outcome === 'committed' ? 'supported' : code === 'CAPABILITY_UNSUPPORTED' ? 'unsupported' : code;
  const want = c.expected!;
  judge('outcome', outcome === want.outcome, want.outcome, outcome);
  if (want.variant !== undefined) {
    const variant = (r.error?.details as { variant?: string } | undefined)?.variant;
    judge('variant', variant === want.variant, want.variant, variant);
  }
};

/** Sealed (terminal) records refuse every later write and delete: the store port's immutability of history. */
async function sealedRefuses(kind: string, first: string, attempted: string) {
  const store = new MemoryStore();
  await store.transact((tx) => tx.put(kind, 'x', { state: first }, { expectedVersion: null, terminal: true }));
  const refused = async (body: Parameters<MemoryStore['transact']>[0]) =>
    store.transact(body).then(
      () => false,
      () => true,
    );
  const updateRefused = await refused((tx) => tx.put(kind, 'x', { state: attempted }, { expectedVersion: 1 }));
  const deleteRefused = await refused((tx) => tx.delete(kind, 'x', 1));
  const final = ((await store.read((r) => r.get<{ state: string }>(kind, 'x')))?.data.state ?? 'absent') as string;
  return { updateRefused, deleteRefused, final };
}

export const attemptTerminalImmutability: CaseRunner = async (c, judge) => {
  const want = c.expected!;
  const r = await sealedRefuses(KINDS.attempt, String(c.firstState), String(c.attemptedState));
  judge('updateCommitted', !r.updateRefused === want.updateCommitted, want.updateCommitted, !r.updateRefused);
  judge('deleteCommitted', !r.deleteRefused === want.deleteCommitted, want.deleteCommitted, !r.deleteRefused);
  judge('finalState', r.final === want.finalState, want.finalState, r.final);
};

export const runTerminalMonotonicity: CaseRunner = async (c, judge) => {
  const want = c.expected!;
  const r = await sealedRefuses(KINDS.run, String(c.firstStatus), String(c.replayStatus));
  judge('firstCommitted', want.firstCommitted === true, want.firstCommitted, true);
  judge('replayCommitted', !r.updateRefused === want.replayCommitted, want.replayCommitted, !r.updateRefused);
  judge('finalStatus', r.final === want.finalStatus, want.finalStatus, r.final);
};

/** occurrence-fence-uniqueness: the fence is the occurrence key `<automationId>@<slot>`, created once. */
export const occurrenceFenceUniqueness: CaseRunner = async (c, judge) => {
  const store = new MemoryStore();
  const key = (o: Record<string, unknown>) => `${String(o.automationId)}@${String(o.scheduledFor)}`;
  const put = (o: Record<string, unknown>) =>
    store
      .transact((tx) =>
        tx.put(KINDS.occurrenceKey, key(o), { occurrenceId: o.occurrenceId }, { expectedVersion: null }),
      )
      .then(
        () => true,
        () => false,
      );
  const first = c.first as Record<string, unknown>;
  await put(first);
  const second = await put(c.second as Record<string, unknown>);
  const rows = (await store.read((r) => r.list(KINDS.occurrenceKey))).length;
  const kept = await store.read((r) => r.get<{ occurrenceId: string }>(KINDS.occurrenceKey, key(first)));
  const want = c.expected!;
  judge(
    'firstPreserved',
    (kept?.data.occurrenceId === first.occurrenceId) === want.firstPreserved,
    want.firstPreserved,
    kept?.data,
  );
  judge('secondCommitted', second === want.secondCommitted, want.secondCommitted, second);
  if (want.rowCount !== undefined) judge('rowCount', rows === want.rowCount, want.rowCount, rows);
};
