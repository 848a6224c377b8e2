import { isDeepStrictEqual } from 'node:util';
import { AttemptState, OccurrenceState, RunState } from '../../../machines/index.js';
import type { EventEnvelope } from '../../changefeed/event-envelope.js';
import { readEventFeed } from '../../changefeed/stored-event.js';
import { SimulatedClock } from '../../clock/clock.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { AUTHORITY_KINDS } from '../../domain/authority.js';
import {
  KINDS,
  occurrenceContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type Receipt,
  type RunRecord,
} from '../../domain/records.js';
import { Engine } from '../../engine/engine.js';
import { MemoryStore } from '../../store/memory-store.js';
import type { LogEntry, StoredRecord } from '../../store/store.js';
import { applyBindings, grantApproval } from './authority-ops.js';
import { SessionLedgerRuntime, type LedgerStatus } from './session-ledger-runtime.js';
import type { CaseRunner, SuiteCase } from './suite-cases.js';
import { envelope, reviseWith } from './vector-session.js';
import { legacyFlatDefinition } from './legacy-flat.js';

const ID = 'terminal-recovery-probe';
const FLAT = legacyFlatDefinition({
  id: ID,
  name: 'Terminal recovery probe',
  status: 'PAUSED',
  familiarId: 'recovery-familiar',
  cwd: '/work/project',
  prompt: 'Run the terminal recovery probe.',
});
/** The run's Runtime Authority binding, with a single-use approval its dispatch consumes. */
const BINDING = {
  automationId: ID,
  principalId: 'principal-recovery',
  familiarId: 'recovery-familiar',
  familiarRevision: 1,
  runtime: 'coven-code',
  requiredCapabilities: ['session.create'],
  approval: { required: true, nonce: 'recovery-approval', ttlMinutes: 600 },
};
/** Short enough that the claim lapses before the session's terminal instant. */
const LEASE_SECONDS = 2;
/** When the engine that reopens the occurrence passes, after the start (past the claim's lease). */
const REOPEN_AFTER_MS = 3000;

/**
 * The two ways this engine genuinely reaches recovery_required with one run and one attempt:
 * - `lease_expired`: the sender died while its launch call was out (the session started, the answer was lost);
 *   the runtime has no launch evidence yet (no terminal row), the claim lapses, side effects cannot be ruled out;
 * - `evidence_lost`: the session was running and observed; the sender died and the runtime restarted, so the
 *   next engine's observation finds the session lost.
 */
export type ReopenPath = 'lease_expired' | 'evidence_lost';
export const REOPEN_PATHS: readonly ReopenPath[] = ['lease_expired', 'evidence_lost'];

let instances = 0;

function recoveryWorld(c: SuiteCase) {
  const store = new MemoryStore();
  const clock = new SimulatedClock(new Date(Date.parse(String(c.startedAt)) - 600_000).toISOString());
  const runtime = new SessionLedgerRuntime();
  const engineAs = (name: string) =>
    new Engine({
      store,
      clock,
      runtimes: [runtime],
      instanceId: `${name}-${++instances}`,
      leaseSeconds: LEASE_SECONDS,
      retention: false,
    });
  return { store, clock, runtime, sender: engineAs('recovery-sender'), reconciler: engineAs('recovery-reconciler') };
}
type World = ReturnType<typeof recoveryWorld>;

const committed = (what: string, r: CommandResponse): CommandResponse => {
  if (r.outcome !== 'committed') throw new Error(`${what}: ${r.outcome} ${JSON.stringify(r.error)}`);
  return r;
};

/** The probe imported, bound to its authority, activated and approved: ready for one manual run. */
async function boundAndActive(w: World): Promise<void> {
  const commands = w.sender.commands;
  committed(
    'import',
    await commands.handle(envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [FLAT] })),
  );
  committed('pause', await reviseWith(commands, ID, () => undefined, 'paused'));
  for (const answer of await applyBindings({ engine: w.sender, clock: w.clock }, [BINDING])) committed('bind', answer);
  const current = await commands.handle(envelope('definition.get.v1', { automationId: ID }));
  const revision = Number((current.result?.definition as { revision?: number } | undefined)?.revision);
  committed(
    'activate',
    await commands.handle(envelope('definition.activate.v1', { automationId: ID }, { expectedRevision: revision })),
  );
  const approval = { automationId: ID, nonce: BINDING.approval.nonce, ttlMinutes: BINDING.approval.ttlMinutes };
  committed('approve', await grantApproval({ engine: w.sender, clock: w.clock }, approval));
}

/** Runs the probe now at the case's start, and brings its occurrence to recovery_required by `path`. */
async function reopen(
  w: World,
  c: SuiteCase,
  path: ReopenPath,
): Promise<{ occurrenceId: string; acceptedBinding: unknown }> {
  const started = Date.parse(String(c.startedAt));
  w.runtime.nextSession = {
    at: String(c.terminalAt),
    status: String(c.sessionStatus) as LedgerStatus,
    exitCode: c.exitCode as number | null,
    ...(c.evidenceShapedOutput === true
      ? { output: JSON.stringify({ outcome: 'succeeded', exitCode: c.exitCode, evidence: 'verified' }) }
      : {}),
  };
  w.runtime.loseNextLaunchAnswer = path === 'lease_expired';
  w.clock.set(new Date(started).toISOString());
  const ran = committed(
    'runNow',
    await w.sender.commands.handle(envelope('occurrence.runNow.v1', { automationId: ID })),
  );
  const occurrenceId = String(ran.result?.occurrenceId);
  const acceptedBinding = bindingOf((await viewOf(w, occurrenceId)).run);
  if (path === 'evidence_lost') {
    w.clock.set(new Date(started + 1000).toISOString());
    await w.sender.tick();
  }
  await w.sender.stop();
  if (path === 'evidence_lost') w.runtime.restart();
  w.clock.set(new Date(started + REOPEN_AFTER_MS).toISOString());
  await w.reconciler.tick();
  return { occurrenceId, acceptedBinding };
}

/** What the store, the changefeed and the runtime hold at one instant. */
interface View {
  at: Date;
  occurrence: OccurrenceRecord;
  run: RunRecord;
  attempts: AttemptRecord[];
  runs: RunRecord[];
  receipts: Array<StoredRecord<Receipt>>;
  authority: Map<string, number>;
  feed: Array<LogEntry<EventEnvelope>>;
  launchCalls: number;
  stops: number;
}

async function viewOf(w: World, occurrenceId: string): Promise<View> {
  const view = await w.store.read(async (r) => {
    const occurrence = (await r.get(KINDS.occurrence, occurrenceId)) as OccurrenceRecord | undefined;
    if (occurrence?.data.attributes.activeRunRef === undefined) throw new Error('the manual run was not accepted');
    const runs = ((await r.list(KINDS.run)) as RunRecord[]).filter((x) => x.data.attributes.automationId === ID);
    const attempts = (await r.list(KINDS.attempt)) as AttemptRecord[];
    const authority = new Map<string, number>();
    for (const kind of Object.values(AUTHORITY_KINDS))
      for (const record of await r.list(kind)) authority.set(`${kind}/${record.id}`, record.version);
    return {
      occurrence,
      run: runs.find((x) => x.id === occurrence.data.attributes.activeRunRef)!,
      runs,
      attempts: attempts.filter((a) => runs.some((x) => x.data.attributes.attemptIds.includes(a.id))),
      receipts: await r.list<Receipt>(KINDS.receipt),
      authority,
      feed: await readEventFeed(r),
    };
  });
  return { ...view, at: w.clock.now(), launchCalls: w.runtime.launchCalls, stops: w.runtime.stopRequests.length };
}

const SETTLED_ATTEMPT: ReadonlySet<string> = new Set([
  AttemptState.succeeded,
  AttemptState.failed,
  AttemptState.cancelled,
  AttemptState.timed_out,
]);
const TERMINAL_RUN: ReadonlySet<string> = new Set(
  Object.values(RunState).filter((s) => s !== RunState.accepted && s !== RunState.running),
);
/** The run's binding, and the revision it pins: the one carrying the Runtime Authority extension it ran under. */
const bindingOf = (run: RunRecord) => ({
  binding: run.data.attributes.binding,
  automationRevision: run.data.attributes.automationRevision,
  definitionDigest: run.data.attributes.definitionDigest,
});
const latestAttempt = (v: View) => v.attempts.find((a) => a.id === v.run.data.attributes.attemptIds.at(-1))!;
const evidenceOf = (a: AttemptRecord | undefined) => ({
  evidence: a?.data.attributes.evidence,
  cursors: a?.data.attributes.outputCursors,
});

/**
 * The suite's expectations as observations of this engine, at one reconcile instant against the view taken right
 * after the reopen (`base`). Counts the reference model keeps per reopened run map to what this engine wrote after
 * the reopen: the launch, the dispatch's approval and the reopen's own ambiguous-attempt receipt come before it.
 * - `runRows` / `attemptRows`: the automation's runs and their attempts in the store;
 * - `sessionRows`: sessions the runtime's ledger holds for the run's attempts;
 * - `automaticRetryRows`: attempts opened as automatic retries;
 * - `baseReceiptRows` / `receiptEventRows`: receipts and `receipt.recorded` events written since the reopen;
 * - `authoritySidecarRows`: Runtime Authority records (familiar, capabilities, approval, service) created or
 *   rewritten since the reopen — an approval consumed for a relaunch would be one;
 * - `runtimeEvidenceRows`: the run's attempts whose terminal evidence or output cursors changed since the reopen;
 * - `launchCount`: launch calls the runtime received since the reopen; `settledRunCount`: runs in a terminal state;
 * - `attemptUnresolved`: the attempt holds no evidence and no settled outcome (succeeded, failed, cancelled,
 *   timed_out): ambiguous is the contract's unresolved outcome, "no operator recovery has resolved it";
 * - `bindingPreserved`: the run's binding and pinned revision (the authority-bound one) as at acceptance;
 * - `leaseReleased`: the claim's lease has lapsed and no engine claimed the occurrence again (same generation);
 * - `sessionTerminalPreserved`: the ledger still reports the session's terminal row, and nobody asked to stop it;
 * - `reopenedStatePreserved`: the occurrence is still the record the reopen committed (same version).
 */
function observations(v: View, base: View, acceptedBinding: unknown, w: World): Record<string, unknown> {
  const attempt = latestAttempt(v);
  const fence = occurrenceContext(v.occurrence).fence;
  const baseFence = occurrenceContext(base.occurrence).fence;
  const run = v.run.data.attributes;
  const sessions = v.run.data.attributes.attemptIds.flatMap((id) => w.runtime.sessionsOf(id));
  const feedAfter = v.feed.slice(base.feed.length);
  return {
    occurrenceState: stateOf(v.occurrence),
    runState: stateOf(v.run),
    attemptState: stateOf(attempt),
    recoveryReasonPreserved:
      v.occurrence.data.attributes.recovery !== undefined &&
      isDeepStrictEqual(v.occurrence.data.attributes.recovery, base.occurrence.data.attributes.recovery) &&
      v.occurrence.data.attributes.stateReason === base.occurrence.data.attributes.stateReason,
    runUnresolved:
      stateOf(v.run) === RunState.running &&
      run.finishedAt === undefined &&
      run.terminalDisposition === undefined &&
      run.receiptRef === undefined,
    attemptUnresolved: !SETTLED_ATTEMPT.has(stateOf(attempt)) && attempt.data.attributes.evidence === undefined,
    leaseReleased:
      fence.leaseExpiresAt !== null &&
      Date.parse(fence.leaseExpiresAt) <= v.at.getTime() &&
      fence.generation === baseFence.generation,
    bindingPreserved: isDeepStrictEqual(bindingOf(v.run), acceptedBinding),
    sessionTerminalPreserved:
      sessions.length > 0 &&
      sessions.every((s) =>
        isDeepStrictEqual(w.runtime.statusAt(s, v.at), { status: s.plan.status, exitCode: s.plan.exitCode }),
      ) &&
      v.stops === base.stops,
    runRows: v.runs.length,
    attemptRows: v.attempts.length,
    sessionRows: sessions.length,
    ...counts(v, base, feedAfter),
    reopenedStatePreserved:
      stateOf(v.occurrence) === OccurrenceState.recovery_required && v.occurrence.version === base.occurrence.version,
  };
}

function counts(v: View, base: View, feedAfter: View['feed']): Record<string, number> {
  const before = new Map(base.attempts.map((a) => [a.id, a]));
  return {
    automaticRetryRows: v.attempts.filter(
      (a) => a.data.attributes.retryClassification.classification === 'automatic_retry',
    ).length,
    baseReceiptRows: v.receipts.filter((r) => !base.receipts.some((b) => b.id === r.id)).length,
    authoritySidecarRows: [...v.authority].filter(([key, version]) => base.authority.get(key) !== version).length,
    receiptEventRows: feedAfter.filter((e) => e.data.kind === 'receipt.recorded').length,
    runtimeEvidenceRows: v.attempts.filter((a) => !isDeepStrictEqual(evidenceOf(a), evidenceOf(before.get(a.id))))
      .length,
    launchCount: v.launchCalls - base.launchCalls,
    settledRunCount: v.runs.filter((r) => TERMINAL_RUN.has(stateOf(r))).length,
  };
}

/** What a contract rule judging a mismatch sees: the occurrence, its runs, their attempts' states. */
function seenOf(v: View) {
  return {
    occurrences: [{ occurrenceId: v.occurrence.id, automationId: ID, state: stateOf(v.occurrence) }],
    runs: v.runs.map((r) => ({ runId: r.id, automationId: ID, state: stateOf(r) })),
    attemptStates: new Map(
      v.runs.map((r) => [
        r.id,
        r.data.attributes.attemptIds.map((id) => stateOf(v.attempts.find((a) => a.id === id)!)),
      ]),
    ),
  };
}

/**
 * runtime-authority-terminal-recovery: for each way this engine reaches recovery_required (`REOPEN_PATHS`), the
 * session's terminal status lands in the runtime's ledger and the engine passes at every reconcile instant; each
 * expectation must hold at every instant (its observation is reported per instant when they differ), judged as
 * `<key>[<path>]`.
 */
export const runtimeAuthorityTerminalRecovery: CaseRunner = async (c, judge) => {
  for (const path of REOPEN_PATHS) {
    const w = recoveryWorld(c);
    await boundAndActive(w);
    const { occurrenceId, acceptedBinding } = await reopen(w, c, path);
    const base = await viewOf(w, occurrenceId);
    const seen: Array<Record<string, unknown>> = [];
    let last = base;
    for (const at of c.reconcileAt as string[]) {
      w.clock.set(at);
      const pass = await w.reconciler.tick();
      if (pass.errors.length > 0) throw new Error(`pass at ${at}: ${pass.errors.map((e) => e.message).join('; ')}`);
      last = await viewOf(w, occurrenceId);
      seen.push(observations(last, base, acceptedBinding, w));
    }
    await w.reconciler.stop();
    for (const [key, want] of Object.entries(c.expected ?? {})) {
      const values = seen.map((o) => (key in o ? o[key] : 'not observed by this interpreter'));
      const ok = values.every((x) => isDeepStrictEqual(x, want));
      const same = values.every((x) => isDeepStrictEqual(x, values[0]));
      judge(`${key}[${path}]`, ok, want, same ? values[0] : values, seenOf(last));
    }
  }
};
