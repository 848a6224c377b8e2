import { isBefore, nonEmpty, type LifecycleEventBase } from './common.js';
import { holdWindowOpen, type RetryPolicy } from './occurrence.js';

/**
 * Context of x-coven-automata.run-hold.v1 (this project's extension, not the contract): whether a running
 * ordinary run is held for an operator retry after a failed attempt. The hold window rules are the
 * occurrence's (`holdWindowOpen`), read from the same pinned facts.
 */
export interface RunHoldContext {
  runId: string;
  occurrenceId: string;
  /** Ordinary runs hold for an operator retry; others never open a hold. */
  operatorHold: boolean;
  /** The run's original deadline; the hold ends with it. */
  deadlineAt: string | null;
  /** The retry policy pinned with the definition revision; exhaustion closes the hold window. */
  retryPolicy: RetryPolicy;
  /** When the current hold opened; null while clear. */
  heldSince: string | null;
  /** The failure class that opened the current hold, when it had one. */
  heldFor: string | null;
}

export interface RunHoldInput {
  runId: string;
  occurrenceId: string;
  operatorHold?: boolean;
  deadlineAt: string | null;
  retryPolicy?: RetryPolicy;
}

export type RunHoldEvent =
  | (LifecycleEventBase<'hold_opened'> & {
      /** Attempts the run has made so far, the failed one included. */
      attempts: number;
      failureClass?: string;
    })
  | LifecycleEventBase<'hold_run_settled'>
  | LifecycleEventBase<'hold_run_timed_out'>
  | LifecycleEventBase<'hold_run_cancelled'>
  | (LifecycleEventBase<'hold_retry_accepted'> & {
      /** The attempt the operator retry opens. */
      attemptId: string;
    })
  | LifecycleEventBase<'hold_deadline_expired'>;

type Args = { context: RunHoldContext; event: RunHoldEvent };

/** One pure predicate per x-coven-automata.run-hold.v1 guard id in extension-machines.json. */
export const runHoldGuards = {
  holdWindowOpen: ({ context, event }: Args) =>
    event.type === 'hold_opened' && holdWindowOpen(context, event.now, event.attempts, event.failureClass),
  retryBeforeHoldDeadline: ({ context, event }: Args) =>
    event.type === 'hold_retry_accepted' && nonEmpty(event.attemptId) && isBefore(event.now, context.deadlineAt),
  // At or after the deadline; a deadline that is missing or unparsable never expires a hold (fail closed).
  holdDeadlinePassed: ({ context, event }: Args) =>
    event.type === 'hold_deadline_expired' &&
    nonEmpty(context.deadlineAt) &&
    !Number.isNaN(Date.parse(context.deadlineAt)) &&
    !isBefore(event.now, context.deadlineAt),
};

export function createRunHoldContext(input: RunHoldInput): RunHoldContext {
  return {
    runId: input.runId,
    occurrenceId: input.occurrenceId,
    operatorHold: input.operatorHold ?? true,
    deadlineAt: input.deadlineAt,
    retryPolicy: input.retryPolicy ?? { maxAttempts: 1, backoffPolicy: 'none', retryableClasses: [] },
    heldSince: null,
    heldFor: null,
  };
}

/** Context after a committed run-hold transition. */
export function applyRunHoldEvent(context: RunHoldContext, event: RunHoldEvent): RunHoldContext {
  switch (event.type) {
    case 'hold_opened':
      return { ...context, heldSince: event.now, heldFor: event.failureClass ?? null };
    case 'hold_retry_accepted':
      return { ...context, heldSince: null, heldFor: null };
    default:
      return context;
  }
}
