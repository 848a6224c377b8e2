import {
  isBefore,
  nonEmpty,
  provesCompletion,
  provesFailure,
  type LifecycleEventBase,
  type TerminalEvidence,
} from './common.js';
import type { CancellationFacts, PreOwnershipFailure } from './occurrence.js';

export interface AttemptContext {
  attemptId: string;
  runId: string;
  occurrenceId: string;
  attemptNumber: number;
  adoptionKey: string;
  fenceGeneration: number;
  dispatchGeneration: number;
  leaseExpiresAt: string;
  deadlineAt: string;
  /** The one runtime session bound to this attempt; a second bind is refused. */
  sessionId: string | null;
  cursors: { eventCursor?: string; logCursor?: string } | null;
}

export interface AttemptInput {
  attemptId: string;
  runId: string;
  occurrenceId: string;
  attemptNumber: number;
  adoptionKey: string;
  fenceGeneration: number;
  leaseExpiresAt: string;
  deadlineAt: string;
}

export type AttemptEvent =
  | (LifecycleEventBase<'dispatch'> & { dispatchGeneration: number; fenceGeneration: number })
  | (LifecycleEventBase<'cancel_acknowledged'> & { cancellation: CancellationFacts })
  | (LifecycleEventBase<'runtime_started'> & { sessionId: string; dispatchGeneration: number })
  | (LifecycleEventBase<'launch_refused'> & { failure: PreOwnershipFailure })
  | (LifecycleEventBase<'dispatch_unconfirmed'> & { acknowledged: boolean })
  | (LifecycleEventBase<'evidence_stream_open'> & {
      sessionId: string;
      cursors: { eventCursor?: string; logCursor?: string };
    })
  | (LifecycleEventBase<'run_settled'> & { evidence: TerminalEvidence })
  | (LifecycleEventBase<'evidence_lost'> & {
      sessionId: string;
      terminalEvidenceSeen: boolean;
      evidenceExpiresAt?: string;
    })
  | LifecycleEventBase<'timeout'>;

type Args = { context: AttemptContext; event: AttemptEvent };

const settledWithCompletion = ({ context, event }: Args) =>
  event.type === 'run_settled' && provesCompletion(event.evidence, context.sessionId);
const settledWithFailure = ({ context, event }: Args) =>
  event.type === 'run_settled' && provesFailure(event.evidence, context.sessionId);

/** One pure predicate per attempt.v1 guard id in state-machines.json. */
export const attemptGuards = {
  singleDispatchInFlight: ({ context, event }: Args) =>
    event.type === 'dispatch' &&
    event.dispatchGeneration === context.dispatchGeneration + 1 &&
    event.fenceGeneration === context.fenceGeneration,
  cancelCommittedBeforeDispatch: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.requestedAt) &&
    context.dispatchGeneration === 0,
  sessionBound: ({ context, event }: Args) =>
    event.type === 'runtime_started' &&
    context.sessionId === null &&
    nonEmpty(event.sessionId) &&
    event.dispatchGeneration === context.dispatchGeneration,
  // Any failure proven to precede runtime ownership refuses deterministically for this attempt: the class
  // (launch_refused, runtime_unavailable, transient_dispatch, lease_expired) only decides whether a retry follows.
  deterministicRefusal: ({ event }: Args) => event.type === 'launch_refused' && event.failure.preOwnership,
  dispatchUnacknowledgedAtLeaseExpiry: ({ context, event }: Args) =>
    event.type === 'dispatch_unconfirmed' && !event.acknowledged && isBefore(context.leaseExpiresAt, event.now),
  cancelAcknowledgedBeforeStart: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' &&
    nonEmpty(event.cancellation.acknowledgedAt ?? event.cancellation.reconciledAt) &&
    context.sessionId === null,
  outputCursorsEstablished: ({ context, event }: Args) =>
    event.type === 'evidence_stream_open' &&
    event.sessionId === context.sessionId &&
    (nonEmpty(event.cursors.eventCursor) || nonEmpty(event.cursors.logCursor)),
  // Without an observing phase the same terminal evidence decides; the observing guards below are its twins.
  terminalFailureEvidence: settledWithFailure,
  terminalCompletionEvidence: settledWithCompletion,
  sessionVanishedBeforeEvidence: ({ context, event }: Args) =>
    event.type === 'evidence_lost' && event.sessionId === context.sessionId && !event.terminalEvidenceSeen,
  verifiedCompletionEvidence: settledWithCompletion,
  verifiedFailureEvidence: settledWithFailure,
  perRunMinutesElapsed: ({ context, event }: Args) =>
    event.type === 'timeout' && !isBefore(event.now, context.deadlineAt),
  cancelAcknowledgedByRuntime: ({ context, event }: Args) =>
    event.type === 'cancel_acknowledged' && nonEmpty(event.cancellation.acknowledgedAt) && context.sessionId !== null,
  heartbeatEvidenceExpired: ({ context, event }: Args) =>
    event.type === 'evidence_lost' &&
    event.sessionId === context.sessionId &&
    !event.terminalEvidenceSeen &&
    isBefore(event.evidenceExpiresAt, event.now),
};

export function createAttemptContext(input: AttemptInput): AttemptContext {
  return { ...input, dispatchGeneration: 0, sessionId: null, cursors: null };
}

/** Context after a committed attempt transition. */
export function applyAttemptEvent(context: AttemptContext, event: AttemptEvent): AttemptContext {
  switch (event.type) {
    case 'dispatch':
      return { ...context, dispatchGeneration: event.dispatchGeneration };
    case 'runtime_started':
      return { ...context, sessionId: event.sessionId };
    case 'evidence_stream_open':
      return { ...context, cursors: event.cursors };
    default:
      return context;
  }
}
