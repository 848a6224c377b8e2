import { QuarantineState } from '../../machines/extension-states.js';
import { deliveryView, type DeliveryRecord } from '../domain/delivery.js';
import { DeliveryState } from '../../machines/extension-states.js';
import { DefinitionState, RunState } from '../../machines/index.js';
import { RunHoldState } from '../../machines/extension-states.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import type { RunHoldContext } from '../guards/run-hold.js';
import { flowReport } from '../domain/flow-report.js';
import { verifyIntegrity } from '../contract/digest.js';
import type { Engine } from '../engine/engine.js';
import { OWNER_LEASE_KIND, type OwnerLease } from '../domain/owner-lease.js';
import { readQuarantine } from '../domain/quarantine.js';
import {
  KINDS,
  occurrenceContext,
  runContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import { retentionQueueKind, type RetentionDue } from '../domain/retention-queue.js';
import { RetentionPolicy, type RetentionOptions } from '../retention/policy.js';
import { nextUnplannedSlot } from '../scheduler/planning.js';
import { overlapOf, waitsWhileBusy } from '../schedule/overlap-extension.js';
import { forEachPage, type StoreReader } from '../store/store.js';
import { staleBinding, type StaleBinding } from './doctor-authority.js';

/** One definition as the doctor judges it. */
export interface DefinitionView {
  automationId: string;
  state: string;
  quarantined: boolean;
  quarantineReason: string | null;
  /** The first slot not planned yet (ISO), null when none is ahead within the schedule's horizon. */
  nextUnplannedSlot: string | null;
  /** Its due slots wait while the automation is busy (x-coven-automata.overlap.v1 buffer-one or catch-up). */
  waitsWhileBusy?: boolean;
}

export interface OccurrenceView {
  occurrenceId: string;
  automationId: string;
  state: string;
  scheduledFor: string;
  eligibleAt?: string;
  /** A retry waits for its backoff until this instant: not backlog before it. */
  notBefore?: string;
  updatedAt: string;
  stateReason: string;
  claimedBy: string | null;
  leaseExpiresAt: string | null;
  misfireDisposition: string;
  recoveryEvidence?: string;
  /** Planned by a backfill: it waits while its automation is busy. */
  backfill?: boolean;
}

export interface RunView {
  runId: string;
  automationId: string;
  occurrenceId: string;
  state: string;
  startedAt: string;
  finishedAt?: string;
  /** The state of the run's current attempt, when the store still holds it. */
  currentAttemptState?: string;
  /** How the current attempt failed (`runtime_error, exit 3`), when it did. */
  currentAttemptFailure?: string;
  /** Held for an operator retry: since when, and until when (the run's deadline). */
  held?: { since: string | null; until: string | null };
}

/** Settled history retention should have compacted by now and has not (retention behind, or off). */
export interface RetentionBacklogEntry {
  occurrenceId: string;
  retentionClass: string;
  settledAt: string;
}

/**
 * What the doctor reads of a store, as plain data: the doctor's judgement ({@link diagnose}) is a pure function
 * of this, the instant and what a daemon knows, so a test can state any store it likes.
 */
export interface DoctorView {
  definitions: DefinitionView[];
  occurrences: OccurrenceView[];
  runs: RunView[];
  receipts: Array<{ receiptId: string; runId: string; verified: boolean }>;
  /** Runs whose atomic output delivery did not commit (failed, or ambiguous after an interruption). */
  undelivered: Array<{
    runId: string;
    automationId: string;
    state: typeof DeliveryState.failed | typeof DeliveryState.ambiguous;
  }>;
  ownerLeases: Array<{ instanceId: string; expiresAt: string }>;
  retentionBacklog: RetentionBacklogEntry[];
  /** Live bound definitions whose familiar revision the registry no longer holds (Runtime Authority). */
  staleBindings: StaleBinding[];
  /** Eligible occurrences waiting at a flow gate (x-coven-automata.limits.v1): held back by policy, not stuck. */
  waitingAtLimits?: string[];
}

/** History past its window by more than this is overdue: a retention sweep runs every few minutes. */
export const RETENTION_GRACE_MS = 15 * 60_000;

/**
 * How long past its window settled history may stay before the doctor calls it overdue: the sweep grace, or the
 * window itself when that is shorter. A fixed grace would let a window of seconds hold a quarter of an hour of
 * history the operator asked to drop without a word; kept twice as long as promised, it is pressure.
 */
export function retentionGraceMs(windowMs: number): number {
  return Math.min(RETENTION_GRACE_MS, windowMs);
}
const PAGE = 500;
const BACKLOG_LIMIT = 1000;

async function definitionViews(
  engine: Engine,
  reader: StoreReader,
): Promise<{ views: DefinitionView[]; stale: StaleBinding[] }> {
  const svc = engine.services;
  const cursors = new Map((await svc.planCursors.current(reader)).map((c) => [c.id, c.lastSlot]));
  const views: DefinitionView[] = [];
  const stale: StaleBinding[] = [];
  for (const d of await svc.definitions.current(reader)) {
    if (d.state === DefinitionState.tombstoned) continue;
    const binding = await staleBinding(reader, d.terms);
    if (binding !== undefined) stale.push(binding);
    const quarantine = await readQuarantine(reader, d.id);
    const next = d.state === DefinitionState.active ? nextUnplannedSlot(svc, d, cursors.get(d.id)) : null;
    views.push({
      automationId: d.id,
      state: d.state,
      quarantined: quarantine.state === QuarantineState.quarantined,
      quarantineReason: quarantine.reason,
      nextUnplannedSlot: next === null ? null : new Date(next).toISOString(),
      ...(waitsWhileBusy(overlapOf(d.terms)) ? { waitsWhileBusy: true } : {}),
    });
  }
  return { views, stale };
}

function occurrenceView(record: OccurrenceRecord): OccurrenceView {
  const a = record.data.attributes;
  const fence = occurrenceContext(record).fence;
  return {
    occurrenceId: record.id,
    automationId: a.automationId,
    state: stateOf(record),
    scheduledFor: a.scheduledFor,
    ...(a.eligibleAt === undefined ? {} : { eligibleAt: a.eligibleAt }),
    ...(a.notBefore === undefined ? {} : { notBefore: a.notBefore }),
    updatedAt: a.updatedAt,
    stateReason: a.stateReason,
    claimedBy: fence.claimedBy,
    leaseExpiresAt: fence.leaseExpiresAt,
    misfireDisposition: a.misfireDisposition,
    ...(a.recovery?.evidence === undefined ? {} : { recoveryEvidence: a.recovery.evidence }),
    ...(a.backfill === undefined ? {} : { backfill: true }),
  };
}

/** How an attempt failed, in the words the CLI uses: class, then exit code and signal. */
function failureText(attempt: AttemptRecord): string | undefined {
  const a = attempt.data.attributes;
  const failureClass = a.failure?.failureClass ?? a.failureClass;
  if (failureClass === undefined) return undefined;
  const code = a.failure?.exitCode ?? null;
  const signal = a.failure?.signal === undefined ? '' : ` (${a.failure.signal})`;
  return code === null ? failureClass : `${failureClass}, exit ${code}${signal}`;
}

/** The runs held for an operator retry now, by run id (the run-hold machine's `held` records). */
export async function heldRuns(reader: StoreReader): Promise<Map<string, NonNullable<RunView['held']>>> {
  const held = new Map<string, NonNullable<RunView['held']>>();
  await forEachPage<EntityRecord<unknown>>(reader, KINDS.runHold, PAGE, (page) => {
    for (const record of page) {
      if (record.data.snapshot.value !== RunHoldState.held) continue;
      const c = record.data.snapshot.context as unknown as RunHoldContext;
      held.set(record.id, { since: c.heldSince, until: c.deadlineAt });
    }
  });
  return held;
}

async function runViews(reader: StoreReader): Promise<RunView[]> {
  const attemptStates = new Map<string, string>();
  const failures = new Map<string, string>();
  await forEachPage<AttemptRecord['data']>(reader, KINDS.attempt, PAGE, (page) => {
    for (const attempt of page as AttemptRecord[]) {
      attemptStates.set(attempt.id, stateOf(attempt));
      const failure = failureText(attempt);
      if (failure !== undefined) failures.set(attempt.id, failure);
    }
  });
  const held = await heldRuns(reader);
  const runs: RunView[] = [];
  await forEachPage<RunRecord['data']>(reader, KINDS.run, PAGE, (page) => {
    for (const run of page as RunRecord[]) {
      const a = run.data.attributes;
      const c = runContext(run);
      const current = c.currentAttemptId === null ? undefined : attemptStates.get(c.currentAttemptId);
      const failure = c.currentAttemptId === null ? undefined : failures.get(c.currentAttemptId);
      const hold = held.get(run.id);
      runs.push({
        runId: run.id,
        automationId: a.automationId,
        occurrenceId: c.occurrenceId,
        state: stateOf(run),
        startedAt: a.startedAt,
        ...(a.finishedAt === undefined ? {} : { finishedAt: a.finishedAt }),
        ...(current === undefined ? {} : { currentAttemptState: current }),
        ...(failure === undefined ? {} : { currentAttemptFailure: failure }),
        ...(hold === undefined || stateOf(run) !== RunState.running ? {} : { held: hold }),
      });
    }
  });
  return runs;
}

async function retentionBacklog(
  reader: StoreReader,
  policy: RetentionPolicy | undefined,
  now: number,
): Promise<RetentionBacklogEntry[]> {
  // Retention off: nothing is ever compacted, so any settled history past the default windows is backlog.
  const windows = policy ?? RetentionPolicy.from();
  const backlog: RetentionBacklogEntry[] = [];
  for (const retentionClass of windows.expiringClasses()) {
    const windowMs = windows.windowMs(retentionClass)!;
    const cutoff = new Date(now - windowMs - retentionGraceMs(windowMs)).toISOString();
    const due = await reader.list<RetentionDue>(retentionQueueKind(retentionClass), {
      before: cutoff,
      limit: BACKLOG_LIMIT,
    });
    for (const entry of due)
      backlog.push({ occurrenceId: entry.data.occurrenceId, retentionClass, settledAt: entry.data.settledAt });
  }
  return backlog;
}

/** How the doctor reads retention: the engine's policy, or `false` when the engine runs without retention. */
export interface ViewOptions {
  now: Date;
  retention?: RetentionOptions | false;
}

/**
 * Reads what the doctor judges from one consistent store read. The engine is only asked for its schedule
 * expander and definition directory (planning's own view of what is due); nothing is written.
 *
 * @example
 * ```ts
 * const view = await engine.services.store.read((r) => readDoctorView(engine, r, { now: new Date() }));
 * ```
 */
export async function readDoctorView(engine: Engine, reader: StoreReader, options: ViewOptions): Promise<DoctorView> {
  const occurrences: OccurrenceView[] = [];
  await forEachPage<OccurrenceRecord['data']>(reader, KINDS.occurrence, PAGE, (page) => {
    for (const record of page as OccurrenceRecord[]) occurrences.push(occurrenceView(record));
  });
  const receipts: DoctorView['receipts'] = [];
  await forEachPage<Record<string, unknown>>(reader, KINDS.receipt, PAGE, (page) => {
    for (const r of page)
      receipts.push({ receiptId: r.id, runId: String(r.data.runId), verified: verifyIntegrity(r.data).valid });
  });
  const undelivered: DoctorView['undelivered'] = [];
  await forEachPage<DeliveryRecord['data']>(reader, KINDS.delivery, PAGE, (page) => {
    for (const record of page) {
      const d = deliveryView(record as DeliveryRecord);
      if (d.state === DeliveryState.failed || d.state === DeliveryState.ambiguous)
        undelivered.push({ runId: d.runId, automationId: d.automationId, state: d.state });
    }
  });
  const leases = await reader.list<OwnerLease>(OWNER_LEASE_KIND);
  const policy = options.retention === false ? undefined : RetentionPolicy.from(options.retention);
  const definitions = await definitionViews(engine, reader);
  return {
    definitions: definitions.views,
    occurrences,
    runs: await runViews(reader),
    receipts,
    undelivered,
    ownerLeases: leases.map((l) => ({ instanceId: l.id, expiresAt: l.data.expiresAt })),
    retentionBacklog: await retentionBacklog(reader, policy, options.now.getTime()),
    staleBindings: definitions.stale,
    waitingAtLimits: (await flowReport(reader, options.now.getTime())).gates.flatMap((gate) => gate.waiting),
  };
}

/**
 * The view with every record of the `hidden` automations taken out (the read ACL's restricted automations the caller
 * may not read), so the report's counts and findings say nothing of them, not even that they exist.
 */
export function withoutAutomations(view: DoctorView, hidden: ReadonlySet<string>): DoctorView {
  if (hidden.size === 0) return view;
  const hiddenOccurrences = new Set(
    view.occurrences.filter((o) => hidden.has(o.automationId)).map((o) => o.occurrenceId),
  );
  const hiddenRuns = new Set(view.runs.filter((r) => hidden.has(r.automationId)).map((r) => r.runId));
  return {
    ...view,
    definitions: view.definitions.filter((d) => !hidden.has(d.automationId)),
    occurrences: view.occurrences.filter((o) => !hiddenOccurrences.has(o.occurrenceId)),
    runs: view.runs.filter((r) => !hiddenRuns.has(r.runId)),
    receipts: view.receipts.filter((r) => !hiddenRuns.has(r.runId)),
    retentionBacklog: view.retentionBacklog.filter((e) => !hiddenOccurrences.has(e.occurrenceId)),
    staleBindings: view.staleBindings.filter((b) => !hidden.has(b.automationId)),
    waitingAtLimits: (view.waitingAtLimits ?? []).filter((id) => !hiddenOccurrences.has(id)),
  };
}
