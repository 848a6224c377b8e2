import { OccurrenceState, type AttemptState, type DefinitionState, type RunState } from '../../machines/states.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import type { Digest } from '../contract/digest.js';
import type { SideEffectClass } from '../contract/vocabulary.js';
import type { AttemptContext } from '../guards/attempt.js';
import type { TerminalEvidence } from '../guards/common.js';
import type { AttemptDisposition, OccurrenceContext } from '../guards/occurrence.js';
import type { LaunchEvidenceLocation, OutboxContext } from '../guards/outbox.js';
import type { RunContext } from '../guards/run.js';
import type { StoredRecord } from '../store/store.js';
import type { AttemptFailure } from './attempt-failure.js';
import type { DefinitionRecord } from './definition-records.js';

/** Record kinds of the execution side (definitions live in command-handler/definition-commands.ts). */
export const KINDS = {
  occurrence: 'occurrence',
  run: 'run',
  attempt: 'attempt',
  receipt: 'receipt',
  /** `<occurrenceId>#<generation>`: created with the run, so a second acceptance of one fence conflicts. */
  fenceRun: 'fence-run',
  /** `<automationId>@<slot>`: one occurrence per slot, however many passes plan it. */
  occurrenceKey: 'occurrence-key',
  /** `<attemptId>#<dispatchGeneration>`: a launch committed before it is released to the runtime. */
  outbox: 'outbox',
  /** `<automationId>`: the last slot planned, so planning walks forward and never backfills. */
  planCursor: 'plan-cursor',
  /**
   * `<automationId>`: x-coven-automata.quarantine.v1 (an extension machine); while `quarantined`, planning,
   * claims and runNow are refused.
   */
  quarantine: 'quarantine',
  /** `<runId>`: x-coven-automata.run-hold.v1 (an extension machine), written once a run's hold first opens. */
  runHold: 'run-hold',
  /**
   * `<attemptId>`: x-coven-automata.delivery.v1 (an extension machine), written pending before a succeeded
   * attempt's output is delivered to its run's pinned atomic outputTarget.
   */
  delivery: 'delivery',
} as const;

export interface OccurrenceAttributes {
  automationId: string;
  automationRevision: number;
  definitionDigest: Digest;
  occurrenceKey: string;
  scheduledFor: string;
  triggerIdentity:
    { kind: 'schedule.slot'; rruleRef: string } | { kind: 'manual.request'; requestedBy?: { principalId: string } };
  stateReason: string;
  misfireDisposition: 'none' | 'collapsed_to_latest' | 'skipped_overlap' | 'skipped_paused' | 'skipped_invalid';
  createdAt: string;
  updatedAt: string;
  observedAt?: string;
  eligibleAt?: string;
  claimMetadata?: { claimedAt: string; leaseMinutes: number };
  activeRunRef?: string;
  cancellation?: {
    requestedAt: string;
    requestedBy?: { principalId: string };
    acknowledgedAt?: string;
    reconciledAt?: string;
  };
  recovery?: {
    enteredAt: string;
    evidence?: 'lease_expired' | 'dispatch_unconfirmed' | 'runtime_lost';
    resolvedDisposition?: 'failed_deterministic' | 'failed_ambiguous';
  };
  /** A retry attempt may not be dispatched before this instant (backoff). */
  notBefore?: string;
  /** Planned by a backfill (x-coven-automata.definition.backfill.v1): it waits while its automation is busy. */
  backfill?: { requestedAt: string };
  /**
   * `allow` (x-coven-automata.overlap.v1): its revision lets it run beside the automation's other live work; the
   * stores' one-live-occurrence rule leaves it out. Pinned at planning, never changed.
   */
  overlap?: 'allow';
}

export interface RunAttributes {
  automationId: string;
  automationRevision: number;
  definitionDigest: Digest;
  binding: {
    familiar: { familiarId: string };
    authority: { principal: { principalId: string }; approval?: { approvalPolicyRef: string } };
    runtime: { runtimeId: string; capabilities: string[]; model?: string };
  };
  stateReason: string;
  startedAt: string;
  finishedAt?: string;
  terminalDisposition?: { outcome: string; failureClass?: string; detail?: string };
  receiptRef?: string;
  attemptIds: string[];
}

export interface AttemptAttributes {
  runtimeId: string;
  priorDisposition?: { attemptNumber: number; outcome: AttemptDisposition };
  retryClassification: {
    classification: 'initial' | 'automatic_retry' | 'operator_retry' | 'operator_recovery';
    eligibleClasses?: string[];
  };
  workerCorrelation?: { workerId: string; sessionId?: string; adoptedAt?: string };
  /**
   * Where the bound session's evidence lives (the launch's recorded location): only a runtime that can read it
   * observes the session. Internal; not part of the contract's attempt.
   */
  evidenceLocation?: LaunchEvidenceLocation;
  outputCursors?: { eventCursor?: string; logCursor?: string };
  stateReason: string;
  openedAt: string;
  settledAt?: string;
  notBefore?: string;
  failureClass?: string;
  /** What the runtime's evidence said of a failed session (exit code, signal, error, output tail). */
  failure?: AttemptFailure;
  evidence?: TerminalEvidence & { outputDigest?: string; cancelled?: boolean };
  /** Set when a cancellation was requested; acknowledged by a later `exited` observation. */
  cancelRequestedAt?: string;
}

/**
 * A launch committed before it is released to the runtime: the context of its x-coven-automata.outbox.v1
 * machine, which alone holds whether it is pending, sending, done or cancelled.
 */
export type OutboxEntry = OutboxContext;

/**
 * The session key a launch is sent under: its outbox id, with a suffix after each proven-unstarted send, since
 * the runtime fenced the earlier key for good.
 */
export const sessionKeyOf = (outboxId: string, entry: Pick<OutboxEntry, 'resends'>): string =>
  entry.resends === undefined || entry.resends === 0 ? outboxId : `${outboxId}~${entry.resends}`;

export interface Receipt {
  schemaVersion: 'coven.automations.v1';
  receiptId: string;
  automationId: string;
  automationRevision: number;
  definitionDigest: Digest;
  occurrenceId: string;
  occurrenceFenceGeneration: number;
  runId: string;
  attemptId: string;
  attemptNumber: number;
  identity: { familiarId: string };
  authority?: { principal: { principalId: string } };
  runtime: { runtimeId: string; capabilities: string[] };
  /** Digest of the bytes an atomic outputTarget received, when the run's delivery committed. */
  deliveryDigest?: Digest;
  resultDigest?: Digest;
  sideEffectClass: SideEffectClass;
  outcome: {
    disposition: string;
    failureClass?: string;
    detail?: string;
    partialFailures?: Array<{ step: string; reason: string; recovered?: boolean }>;
    recoveryDisposition?: string;
  };
  producedAt: string;
  producer: { component: string; instanceId: string };
  integrity: Digest & { authentication: 'none' };
  privacy: { classification: 'operational'; retention: { classification: 'standard' } };
}

export type OccurrenceRecord = StoredRecord<EntityRecord<OccurrenceAttributes>>;
export type RunRecord = StoredRecord<EntityRecord<RunAttributes>>;
export type AttemptRecord = StoredRecord<EntityRecord<AttemptAttributes>>;
/** The state union of the machine whose records carry `T`: what a transition of such a record moves between. */
export type StateOf<T> = T extends OccurrenceAttributes
  ? OccurrenceState
  : T extends RunAttributes
    ? RunState
    : T extends AttemptAttributes
      ? AttemptState
      : string;

/**
 * The lifecycle state of a stored entity, typed by its machine: a record's kind fixes the machine that wrote its
 * snapshot (`transitionEntity` refuses any other), so the persisted value is one of that machine's states.
 */
export function stateOf(record: OccurrenceRecord): OccurrenceState;
export function stateOf(record: RunRecord): RunState;
export function stateOf(record: AttemptRecord): AttemptState;
export function stateOf(record: DefinitionRecord): DefinitionState;
export function stateOf(record: StoredRecord<EntityRecord<unknown>>): string;
export function stateOf(record: StoredRecord<EntityRecord<unknown>>): string {
  return record.data.snapshot.value;
}
export const occurrenceContext = (r: OccurrenceRecord) => r.data.snapshot.context as unknown as OccurrenceContext;
export const runContext = (r: RunRecord) => r.data.snapshot.context as unknown as RunContext;
export const attemptContext = (r: AttemptRecord) => r.data.snapshot.context as unknown as AttemptContext;

/**
 * Occurrences with work under way: claimed through recovery_required. A deliberate subset of the generated
 * `OCCURRENCE_LIVE_STATES`, which also holds planned and eligible: those are live but nothing works on them yet.
 */
export const OCCURRENCE_LIVE: ReadonlySet<OccurrenceState> = new Set([
  OccurrenceState.claimed,
  OccurrenceState.dispatching,
  OccurrenceState.running,
  OccurrenceState.recovering,
  OccurrenceState.recovery_required,
]);

const compact = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** The contract's AutomationOccurrence for a stored occurrence; its state comes from the machine snapshot. */
export function renderOccurrence(r: OccurrenceRecord): Record<string, unknown> {
  const a = r.data.attributes;
  const c = occurrenceContext(r);
  return compact({
    schemaVersion: 'coven.automations.v1',
    occurrenceId: r.id,
    automationId: a.automationId,
    automationRevision: a.automationRevision,
    definitionDigest: a.definitionDigest,
    triggerIdentity: a.triggerIdentity,
    occurrenceKey: a.occurrenceKey,
    scheduledFor: a.scheduledFor,
    observedAt: a.observedAt,
    eligibleAt: a.eligibleAt,
    state: stateOf(r),
    stateReason: a.stateReason,
    fence: compact({
      generation: c.fence.generation,
      claimedBy: c.fence.claimedBy ?? undefined,
      leaseExpiresAt: c.fence.leaseExpiresAt ?? undefined,
    }),
    misfireDisposition: a.misfireDisposition,
    claimMetadata: a.claimMetadata,
    activeRunRef: a.activeRunRef,
    cancellation: a.cancellation,
    recovery: a.recovery,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
  });
}

export function renderRun(r: RunRecord): Record<string, unknown> {
  const a = r.data.attributes;
  const c = runContext(r);
  return compact({
    schemaVersion: 'coven.automations.v1',
    runId: r.id,
    occurrenceId: c.occurrenceId,
    automationId: a.automationId,
    automationRevision: a.automationRevision,
    definitionDigest: a.definitionDigest,
    binding: a.binding,
    state: stateOf(r),
    stateReason: a.stateReason,
    attemptCount: a.attemptIds.length,
    currentAttemptId: c.currentAttemptId ?? undefined,
    deadlineAt: c.deadlineAt,
    terminalDisposition: a.terminalDisposition,
    receiptRef: a.receiptRef,
    startedAt: a.startedAt,
    finishedAt: a.finishedAt,
  });
}

export function renderAttempt(r: AttemptRecord): Record<string, unknown> {
  const a = r.data.attributes;
  const c = attemptContext(r);
  return compact({
    schemaVersion: 'coven.automations.v1',
    attemptId: r.id,
    runId: c.runId,
    occurrenceId: c.occurrenceId,
    attemptNumber: c.attemptNumber,
    adoptionKey: c.adoptionKey,
    priorDisposition: a.priorDisposition,
    dispatchFence: { occurrenceFenceGeneration: c.fenceGeneration, dispatchGeneration: c.dispatchGeneration },
    workerCorrelation: a.workerCorrelation,
    retryClassification: a.retryClassification,
    outputCursors: a.outputCursors,
    state: stateOf(r),
    stateReason: a.stateReason,
    notBefore: a.notBefore,
    openedAt: a.openedAt,
    settledAt: a.settledAt,
  });
}
