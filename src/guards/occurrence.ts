import { stopOwnedByCancellation } from './stop-ownership.js';
import {
  MAX_ATTEMPTS_PER_RUN,
  type PreOwnershipFailureClass,
  type RetryableFailureClass,
  type SideEffectClass,
} from '../contract/vocabulary.js';
import {
  instant,
  isBefore,
  nonEmpty,
  provesCompletion,
  provesFailure,
  type LifecycleEventBase,
  type TerminalEvidence,
} from './common.js';

/** The retry policy pinned from the definition revision the occurrence was planned against. */
export interface RetryPolicy {
  maxAttempts: number;
  backoffPolicy: 'none' | 'fixed' | 'exponential';
  backoffSeconds?: number;
  retryableClasses: RetryableFailureClass[];
}

export interface OccurrenceFence {
  /** Incremented by every claim; a run is accepted only for the current generation. */
  generation: number;
  claimedBy: string | null;
  leaseExpiresAt: string | null;
}

export interface OccurrenceContext {
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  definitionDigest: string;
  scheduledFor: string;
  fence: OccurrenceFence;
  retryPolicy: RetryPolicy;
  perRunMinutes: number;
  /** Ordinary runs hold for an operator retry after a failure instead of settling at once. */
  operatorHold: boolean;
  /** The run's original deadline, fixed by the first claim; every later attempt and retry is bounded by it. */
  deadlineAt: string | null;
  attemptCount: number;
  /** An attempt opened by a retry that has not been adopted into dispatch yet. */
  openAttemptNumber: number | null;
  sessionId: string | null;
  /** Any runtime evidence (a started session) since the current claim. */
  runtimeEvidenceRecorded: boolean;
  /** Set once work of this occurrence was found ambiguous; automatic retry is then closed for good. */
  ambiguousDisposition: boolean;
}

export interface OccurrenceInput {
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  definitionDigest: string;
  scheduledFor: string;
  retryPolicy: RetryPolicy;
  perRunMinutes: number;
  operatorHold?: boolean;
}

export type MisfireDisposition = 'collapsed_to_latest' | 'skipped_overlap' | 'skipped_paused' | 'skipped_invalid';
export type AttemptDisposition = 'failed' | 'timed_out' | 'cancelled' | 'ambiguous';

export interface PreOwnershipFailure {
  failureClass: PreOwnershipFailureClass;
  /** The failure is proven to have happened before the runtime took ownership of any session. */
  preOwnership: boolean;
}

export interface CancellationFacts {
  requestedAt: string;
  acknowledgedAt?: string;
  reconciledAt?: string;
}

export interface SideEffectFacts {
  /** A launch was released to the runtime for this claim. */
  launched: boolean;
  /** Highest side-effect class the runtime descriptor allows. */
  boundClass: SideEffectClass;
  /** The bound comes from a proof (containment receipt, pinned descriptor), not an assumption. */
  proven: boolean;
}

export type OccurrenceEvent =
  | LifecycleEventBase<'eligibility_passed'>
  | (LifecycleEventBase<'misfire'> & { disposition: MisfireDisposition })
  | (LifecycleEventBase<'definition_superseded'> & { currentRevision: number })
  | (LifecycleEventBase<'cancel_acknowledged'> & { cancellation: CancellationFacts })
  | (LifecycleEventBase<'claim'> & { expectedGeneration: number; claimedBy: string; leaseExpiresAt: string })
  | (LifecycleEventBase<'operator_retry'> & {
      runId: string;
      priorAttemptNumber: number;
      priorDisposition: AttemptDisposition;
      latestAttemptTerminal: boolean;
      runHeld: boolean;
      quarantined: boolean;
      stopUnresolved: boolean;
    })
  | (LifecycleEventBase<'automatic_retry'> & {
      failure: PreOwnershipFailure;
      /** The attempt that failed; the retry opens the next number. */
      priorAttemptNumber: number;
      priorDisposition: AttemptDisposition;
      notBefore: string;
    })
  | (LifecycleEventBase<'run_settled'> & {
      failure?: PreOwnershipFailure;
      /** The attempt whose failure settles the run. */
      attemptNumber?: number;
      evidence?: TerminalEvidence;
      receiptRef?: string;
    })
  | (LifecycleEventBase<'attempt_adopted'> & {
      attemptId: string;
      attemptNumber: number;
      adoptionKey: string;
      fenceGeneration: number;
    })
  | LifecycleEventBase<'lease_expired'>
  | (LifecycleEventBase<'runtime_started'> & { attemptId: string; sessionId: string })
  | (LifecycleEventBase<'launch_refused'> & { failure: PreOwnershipFailure })
  | (LifecycleEventBase<'timeout'> & {
      settledEvidence: boolean;
      /** When a cancellation of the occurrence's work was committed, if one was. */
      cancellationRequestedAt?: string;
    })
  | (LifecycleEventBase<'evidence_lost'> & { sessionId: string; terminalEvidenceSeen: boolean })
  | (LifecycleEventBase<'recovery_determined'> & { sideEffects: SideEffectFacts })
  | (LifecycleEventBase<'recovery_ambiguous'> & { sideEffects: SideEffectFacts })
  | (LifecycleEventBase<'operator_recovery_failed'> & { evidenceDetermination: string; statement: string })
  | (LifecycleEventBase<'operator_recovery_attempt'> & {
      evidenceDetermination: string;
      statement: string;
      attemptId: string;
      attemptNumber: number;
      adoptionKey: string;
      priorDisposition: AttemptDisposition;
      leaseExpiresAt: string;
    });

type Args = { context: OccurrenceContext; event: OccurrenceEvent };

/** Classes that read at most: work bounded by them cannot have changed anything. */
const NON_MUTATING: ReadonlySet<SideEffectClass> = new Set(['none', 'local_read', 'external_read']);

/** Nothing was launched, or the launched work is proven unable to change anything. */
export function sideEffectsRuledOut(facts: SideEffectFacts): boolean {
  return !facts.launched || (facts.proven && NON_MUTATING.has(facts.boundClass));
}

function deadlineOpen(context: OccurrenceContext, at: string): boolean {
  return context.deadlineAt !== null && isBefore(at, context.deadlineAt);
}

/** Retryable failures used up the pinned policy: the run settles (and the automation is quarantined). */
export function retryExhausted(policy: RetryPolicy, attempts: number, failureClass: string | undefined): boolean {
  return (
    failureClass !== undefined &&
    (policy.retryableClasses as string[]).includes(failureClass) &&
    attempts >= policy.maxAttempts
  );
}

/**
 * An ordinary run whose attempt failed stays held for an operator retry while this is true: before its
 * deadline, with fewer than ten attempts, and not after retryable failures exhausted the policy.
 */
export function holdWindowOpen(
  context: Pick<OccurrenceContext, 'operatorHold' | 'deadlineAt' | 'retryPolicy'>,
  now: string,
  attempts: number,
  failureClass?: string,
): boolean {
  return (
    context.operatorHold &&
    attempts < MAX_ATTEMPTS_PER_RUN &&
    context.deadlineAt !== null &&
    isBefore(now, context.deadlineAt) &&
    !retryExhausted(context.retryPolicy, attempts, failureClass)
  );
}

/**
 * A pre-ownership failure happens while the occurrence is still `claimed` (it records the adoption only once
 * the runtime acknowledged), so the failing attempt's number arrives on the event; the count is the larger.
 */
function attemptsSoFar(context: OccurrenceContext, reported: number | undefined): number {
  return Math.max(context.attemptCount, reported ?? 0);
}

function automaticRetryPermitted(
  context: OccurrenceContext,
  failure: PreOwnershipFailure | undefined,
  notBefore: string,
  attempts: number,
): boolean {
  if (failure === undefined || !failure.preOwnership || failure.failureClass === 'launch_refused') return false;
  const policy = context.retryPolicy;
  return (
    !context.ambiguousDisposition &&
    policy.retryableClasses.includes(failure.failureClass) &&
    attempts < Math.min(policy.maxAttempts, MAX_ATTEMPTS_PER_RUN) &&
    deadlineOpen(context, notBefore)
  );
}

function leaseExpiredWithoutEvidence({ context, event }: Args): boolean {
  return isBefore(context.fence.leaseExpiresAt, event.now) && !context.runtimeEvidenceRecorded;
}

/** One pure predicate per occurrence.v1 guard id in state-machines.json. */
export const occurrenceGuards = {
  misfireDisposesSlot: ({ event }: Args) =>
    event.type === 'misfire' &&
    ['collapsed_to_latest', 'skipped_overlap', 'skipped_paused', 'skipped_invalid'].includes(event.disposition),
  supersededBeforeClaim: ({ context, event }: Args) =>
    event.type === 'definition_superseded' &&
    event.currentRevision > context.automationRevision &&
    context.fence.claimedBy === null,
  cancelBeforeClaim: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.requestedAt) &&
    context.fence.claimedBy === null,
  claimCompareAndSet: ({ context, event }: Args) =>
    event.type === 'claim' &&
    event.expectedGeneration === context.fence.generation &&
    nonEmpty(event.claimedBy) &&
    isBefore(event.now, event.leaseExpiresAt),
  operatorRetryAllowed: ({ context, event }: Args) =>
    event.type === 'operator_retry' &&
    event.runHeld &&
    event.latestAttemptTerminal &&
    event.priorDisposition !== 'ambiguous' &&
    event.priorAttemptNumber >= context.attemptCount &&
    event.priorAttemptNumber < MAX_ATTEMPTS_PER_RUN &&
    deadlineOpen(context, event.now) &&
    !event.quarantined &&
    !event.stopUnresolved,
  automaticRetryAllowed: ({ context, event }: Args) =>
    event.type === 'automatic_retry' &&
    event.priorDisposition === 'failed' &&
    !isBefore(event.notBefore, event.now) &&
    event.priorAttemptNumber >= context.attemptCount &&
    automaticRetryPermitted(context, event.failure, event.notBefore, attemptsSoFar(context, event.priorAttemptNumber)),
  preOwnershipFailureFinal: ({ context, event }: Args) =>
    event.type === 'run_settled' &&
    event.failure !== undefined &&
    event.failure.preOwnership &&
    !automaticRetryPermitted(context, event.failure, event.now, attemptsSoFar(context, event.attemptNumber)) &&
    !holdWindowOpen(context, event.now, attemptsSoFar(context, event.attemptNumber), event.failure.failureClass),
  adoptionFenceMatches: ({ context, event }: Args) =>
    event.type === 'attempt_adopted' &&
    nonEmpty(event.adoptionKey) &&
    nonEmpty(event.attemptId) &&
    event.fenceGeneration === context.fence.generation &&
    event.attemptNumber === (context.openAttemptNumber ?? context.attemptCount + 1) &&
    event.attemptNumber <= MAX_ATTEMPTS_PER_RUN,
  claimLeaseExpiredWithoutEvidence: (args: Args) =>
    args.event.type === 'lease_expired' && leaseExpiredWithoutEvidence(args),
  cancelReconciledBeforeDispatch: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.reconciledAt) &&
    !context.runtimeEvidenceRecorded,
  runtimeAcknowledgedStart: ({ context, event }: Args) =>
    event.type === 'runtime_started' &&
    nonEmpty(event.sessionId) &&
    nonEmpty(event.attemptId) &&
    context.sessionId === null,
  // Failed before any side effect: proven pre-ownership, whatever its class (no retry edge leaves dispatching).
  launchRefusedBeforeSideEffect: ({ event }: Args) => event.type === 'launch_refused' && event.failure.preOwnership,
  dispatchLeaseExpiredWithoutEvidence: (args: Args) =>
    args.event.type === 'lease_expired' && leaseExpiredWithoutEvidence(args),
  cancelBeforeAttemptStarted: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.acknowledgedAt ?? event.cancellation.reconciledAt) &&
    !context.runtimeEvidenceRecorded,
  completionEvidenceWithReceipt: ({ context, event }: Args) =>
    event.type === 'run_settled' && provesCompletion(event.evidence, context.sessionId) && nonEmpty(event.receiptRef),
  failureEvidenceWithoutHold: ({ context, event }: Args) =>
    event.type === 'run_settled' &&
    provesFailure(event.evidence, context.sessionId) &&
    !holdWindowOpen(context, event.now, attemptsSoFar(context, event.attemptNumber)),
  deadlineElapsedWithoutSettlement: ({ context, event }: Args) =>
    event.type === 'timeout' &&
    !event.settledEvidence &&
    context.deadlineAt !== null &&
    !isBefore(event.now, context.deadlineAt) &&
    !stopOwnedByCancellation(context.deadlineAt, event.cancellationRequestedAt, event.now),
  cancelAcknowledgedOrReconciled: ({ event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.acknowledgedAt ?? event.cancellation.reconciledAt),
  runtimeLostMidRun: ({ context, event }: Args) =>
    event.type === 'evidence_lost' && !event.terminalEvidenceSeen && event.sessionId === context.sessionId,
  noSideEffectsPossible: ({ event }: Args) =>
    event.type === 'recovery_determined' && sideEffectsRuledOut(event.sideEffects),
  sideEffectsNotRuledOut: ({ event }: Args) =>
    event.type === 'recovery_ambiguous' && !sideEffectsRuledOut(event.sideEffects),
  recoverFailedDeterministic: ({ event }: Args) =>
    event.type === 'operator_recovery_failed' &&
    event.evidenceDetermination === 'failed_deterministic' &&
    nonEmpty(event.statement),
  recoverWithNewAttempt: ({ context, event }: Args) =>
    event.type === 'operator_recovery_attempt' &&
    event.evidenceDetermination === 'retry_with_new_attempt' &&
    nonEmpty(event.statement) &&
    event.priorDisposition === 'ambiguous' &&
    event.attemptNumber === context.attemptCount + 1 &&
    event.attemptNumber <= MAX_ATTEMPTS_PER_RUN &&
    deadlineOpen(context, event.now) &&
    isBefore(event.now, event.leaseExpiresAt),
};

export function createOccurrenceContext(input: OccurrenceInput): OccurrenceContext {
  return {
    occurrenceId: input.occurrenceId,
    automationId: input.automationId,
    automationRevision: input.automationRevision,
    definitionDigest: input.definitionDigest,
    scheduledFor: input.scheduledFor,
    fence: { generation: 0, claimedBy: null, leaseExpiresAt: null },
    retryPolicy: input.retryPolicy,
    perRunMinutes: input.perRunMinutes,
    operatorHold: input.operatorHold ?? true,
    deadlineAt: null,
    attemptCount: 0,
    openAttemptNumber: null,
    sessionId: null,
    runtimeEvidenceRecorded: false,
    ambiguousDisposition: false,
  };
}

/** Back to planned with attempt `prior + 1` opened (adopted, not yet dispatched). */
function released(context: OccurrenceContext, prior: number): OccurrenceContext {
  const next = Math.max(context.attemptCount, prior) + 1;
  return {
    ...context,
    fence: { ...context.fence, claimedBy: null, leaseExpiresAt: null },
    sessionId: null,
    runtimeEvidenceRecorded: false,
    openAttemptNumber: next,
    attemptCount: next,
  };
}

/** Context after a committed occurrence transition. */
export function applyOccurrenceEvent(context: OccurrenceContext, event: OccurrenceEvent): OccurrenceContext {
  switch (event.type) {
    case 'claim':
      return {
        ...context,
        fence: {
          generation: context.fence.generation + 1,
          claimedBy: event.claimedBy,
          leaseExpiresAt: event.leaseExpiresAt,
        },
        deadlineAt: context.deadlineAt ?? new Date(instant(event.now) + context.perRunMinutes * 60_000).toISOString(),
      };
    case 'attempt_adopted':
      return { ...context, attemptCount: event.attemptNumber, openAttemptNumber: null };
    case 'operator_retry':
    case 'automatic_retry':
      return released(context, event.priorAttemptNumber);
    case 'runtime_started':
      return { ...context, sessionId: event.sessionId, runtimeEvidenceRecorded: true };
    case 'evidence_lost':
    case 'recovery_ambiguous':
      return { ...context, ambiguousDisposition: true };
    case 'operator_recovery_attempt':
      // The recovery dispatches without a claim, so it takes a fence generation of its own: every dispatch
      // of an occurrence has a distinct fence, and a late answer to the ambiguous dispatch cannot pass for it.
      return {
        ...context,
        attemptCount: event.attemptNumber,
        openAttemptNumber: null,
        sessionId: null,
        runtimeEvidenceRecorded: false,
        fence: { ...context.fence, generation: context.fence.generation + 1, leaseExpiresAt: event.leaseExpiresAt },
      };
    default:
      return context;
  }
}
