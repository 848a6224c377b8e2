import { AttemptState } from '../../machines/states.js';
import { isBefore, nonEmpty, type LifecycleEventBase } from './common.js';
import { holdWindowOpen, type RetryPolicy } from './occurrence.js';

export interface RunContext {
  runId: string;
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  fenceGeneration: number;
  deadlineAt: string;
  /** Ordinary runs hold for an operator retry after a failed attempt until their deadline. */
  operatorHold: boolean;
  /** The retry policy pinned with the definition revision; exhaustion closes the hold window. */
  retryPolicy: RetryPolicy;
  /** Highest attempt number this run has started or settled; older attempts cannot settle it. */
  attemptCount: number;
  currentAttemptId: string | null;
  receiptRef: string | null;
}

export interface RunInput {
  runId: string;
  occurrenceId: string;
  automationId: string;
  automationRevision: number;
  fenceGeneration: number;
  deadlineAt: string;
  operatorHold?: boolean;
  retryPolicy?: RetryPolicy;
}

/** The settled attempt a run event reports on. */
export interface SettledAttempt {
  attemptId: string;
  attemptNumber: number;
  state: 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'ambiguous';
}

export type RunEvent =
  | (LifecycleEventBase<'attempt_started'> & {
      attemptId: string;
      attemptNumber: number;
      /** When the attempt's adoption record became durable. */
      adoptionCommittedAt: string | null;
      /** When the launch was released to the runtime. */
      launchIssuedAt: string;
    })
  | (LifecycleEventBase<'launch_refused'> & {
      attempts: Array<{ attemptNumber: number; state: string; failureClass: string | null; evidenceRecorded: boolean }>;
    })
  | LifecycleEventBase<'cancel_acknowledged'>
  | (LifecycleEventBase<'attempt_settled'> & {
      attempt: SettledAttempt;
      receiptRef?: string;
      /** The retry policy opens another attempt for this failure. */
      furtherAttemptOpens: boolean;
      /** The failure's class, when it failed before the runtime took ownership. */
      failureClass?: string;
    })
  | LifecycleEventBase<'timeout'>
  | (LifecycleEventBase<'attempt_ambiguous'> & { attempt: SettledAttempt; operatorRecoveryResolved: boolean });

type Args = { context: RunContext; event: RunEvent };

const PRE_OWNERSHIP: ReadonlySet<string> = new Set([
  'launch_refused',
  'runtime_unavailable',
  'transient_dispatch',
  'lease_expired',
]);

/** The settling attempt is the run's latest: retries open attempts the run machine never sees start. */
const isLatest = (context: RunContext, attempt: SettledAttempt) =>
  attempt.attemptNumber >= context.attemptCount && nonEmpty(attempt.attemptId);

/** One pure predicate per run.v1 guard id in state-machines.json. */
export const runGuards = {
  adoptionCommittedBeforeSideEffect: ({ event }: Args) =>
    event.type === 'attempt_started' &&
    nonEmpty(event.attemptId) &&
    event.adoptionCommittedAt !== null &&
    !isBefore(event.launchIssuedAt, event.adoptionCommittedAt),
  // "Deterministically before evidence": every attempt failed with a pre-ownership class and left no evidence.
  everyAttemptRefused: ({ event }: Args) =>
    event.type === 'launch_refused' &&
    event.attempts.length > 0 &&
    event.attempts.every(
      (a) =>
        a.state === AttemptState.failed &&
        a.failureClass !== null &&
        PRE_OWNERSHIP.has(a.failureClass) &&
        !a.evidenceRecorded,
    ),
  attemptSucceededWithReceipt: ({ context, event }: Args) =>
    event.type === 'attempt_settled' &&
    event.attempt.state === AttemptState.succeeded &&
    isLatest(context, event.attempt) &&
    nonEmpty(event.receiptRef),
  attemptFailedWithoutFurtherAttempt: ({ context, event }: Args) =>
    event.type === 'attempt_settled' &&
    event.attempt.state === AttemptState.failed &&
    isLatest(context, event.attempt) &&
    !event.furtherAttemptOpens &&
    !holdWindowOpen(context, event.now, event.attempt.attemptNumber, event.failureClass),
  currentAttemptAmbiguous: ({ context, event }: Args) =>
    event.type === 'attempt_ambiguous' &&
    event.attempt.state === AttemptState.ambiguous &&
    isLatest(context, event.attempt) &&
    !event.operatorRecoveryResolved,
};

export function createRunContext(input: RunInput): RunContext {
  return {
    runId: input.runId,
    occurrenceId: input.occurrenceId,
    automationId: input.automationId,
    automationRevision: input.automationRevision,
    fenceGeneration: input.fenceGeneration,
    deadlineAt: input.deadlineAt,
    operatorHold: input.operatorHold ?? true,
    retryPolicy: input.retryPolicy ?? { maxAttempts: 1, backoffPolicy: 'none', retryableClasses: [] },
    attemptCount: 0,
    currentAttemptId: null,
    receiptRef: null,
  };
}

/** Context after a committed run transition. */
export function applyRunEvent(context: RunContext, event: RunEvent): RunContext {
  switch (event.type) {
    case 'attempt_started':
      return {
        ...context,
        currentAttemptId: event.attemptId,
        attemptCount: Math.max(context.attemptCount, event.attemptNumber),
      };
    case 'attempt_settled':
    case 'attempt_ambiguous':
      return {
        ...context,
        currentAttemptId: event.attempt.attemptId,
        attemptCount: Math.max(context.attemptCount, event.attempt.attemptNumber),
        ...(event.type === 'attempt_settled' && event.receiptRef !== undefined ? { receiptRef: event.receiptRef } : {}),
      };
    default:
      return context;
  }
}
