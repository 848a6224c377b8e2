import { nonEmpty, type LifecycleEventBase } from './common.js';
import { retryExhausted, type RetryPolicy } from './occurrence.js';

/**
 * Context of x-coven-automata.quarantine.v1 (this project's extension, not the contract): whether an
 * automation is quarantined (record kind 'quarantine', id `<automationId>`, data {since, reason}).
 */
export interface QuarantineContext {
  automationId: string;
  /** When the current quarantine began; null while clear. */
  since: string | null;
  reason: string | null;
}

export interface QuarantineInput {
  automationId: string;
}

/** What a quarantine is imposed for: the engine imposes one only with the facts that prove it. */
export type QuarantineCause =
  | {
      kind: 'retries_exhausted';
      /** The policy pinned with the failed run's definition revision. */
      retryPolicy: RetryPolicy;
      attempts: number;
      failureClass: string;
    }
  | {
      kind: 'definition_integrity';
      /** The stored revision's digest differed from the one it carries or the occurrence pinned. */
      computedDigest: string;
      expectedDigest: string | null;
    };

export type QuarantineEvent =
  | (LifecycleEventBase<'quarantine_imposed'> & { reason: string; cause: QuarantineCause })
  | LifecycleEventBase<'quarantine_lifted'>
  | LifecycleEventBase<'quarantine_definition_tombstoned'>;

type Args = { context: QuarantineContext; event: QuarantineEvent };

function causeProven(cause: QuarantineCause): boolean {
  return cause.kind === 'retries_exhausted'
    ? retryExhausted(cause.retryPolicy, cause.attempts, cause.failureClass)
    : nonEmpty(cause.computedDigest) && cause.computedDigest !== cause.expectedDigest;
}

/** One pure predicate per x-coven-automata.quarantine.v1 guard id in extension-machines.json. */
export const quarantineGuards = {
  quarantineCauseProven: ({ event }: Args) =>
    event.type === 'quarantine_imposed' && nonEmpty(event.reason) && causeProven(event.cause),
};

export function createQuarantineContext(input: QuarantineInput): QuarantineContext {
  return { automationId: input.automationId, since: null, reason: null };
}

/** Context after a committed quarantine transition. */
export function applyQuarantineEvent(context: QuarantineContext, event: QuarantineEvent): QuarantineContext {
  switch (event.type) {
    case 'quarantine_imposed':
      return { ...context, since: event.now, reason: event.reason };
    case 'quarantine_lifted':
      return { ...context, since: null, reason: null };
    default:
      return context;
  }
}
