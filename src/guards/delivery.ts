import { nonEmpty, type LifecycleEventBase } from './common.js';

/**
 * Context of x-coven-automata.delivery.v1 (this project's extension, not the contract): the atomic output
 * delivery of one attempt's success (record kind 'delivery', id `<attemptId>`; an operator retry delivers anew).
 * The record is written pending before the target is touched, so a crash between the write and its settlement
 * leaves a pending record behind, never a silent one.
 */
export interface DeliveryContext {
  runId: string;
  occurrenceId: string;
  automationId: string;
  /** The pinned definition's outputTarget, relative to the engine's delivery root. */
  target: string;
  /** The attempt whose success evidence the delivery carries. */
  attemptId: string;
  /** The engine instance writing the target; null until it starts. */
  writer: string | null;
  pendingSince: string | null;
  /** SHA-256 (lowercase hex) of the bytes committed to the target; set once committed. */
  digest: string | null;
  /** Why the delivery did not commit; set once failed or ambiguous. */
  reason: string | null;
  settledAt: string | null;
}

export interface DeliveryInput {
  attemptId: string;
  runId: string;
  occurrenceId: string;
  automationId: string;
  target: string;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export type DeliveryEvent =
  | (LifecycleEventBase<'delivery_started'> & {
      writer: string;
      /** The attempt's terminal evidence as the worker verified it. */
      evidence: { outcome: string; exitCode: number | null; verified: boolean };
    })
  | (LifecycleEventBase<'delivery_committed'> & { digest: string })
  | (LifecycleEventBase<'delivery_failed'> & { reason: string })
  | (LifecycleEventBase<'delivery_interrupted'> & {
      /** Whether the engine named as writer is still writing this delivery, as the sender observed it. */
      writerStillWriting: boolean;
      reason: string;
    });

type Args = { context: DeliveryContext; event: DeliveryEvent };

/** One pure predicate per x-coven-automata.delivery.v1 guard id in extension-machines.json. */
export const deliveryGuards = {
  deliveryOwedForSuccess: ({ context, event }: Args) =>
    event.type === 'delivery_started' &&
    nonEmpty(context.target) &&
    nonEmpty(event.writer) &&
    event.evidence.verified &&
    event.evidence.outcome === 'succeeded' &&
    (event.evidence.exitCode === null || event.evidence.exitCode === 0),
  commitProven: ({ event }: Args) => event.type === 'delivery_committed' && SHA256_HEX.test(event.digest),
  commitFailureReported: ({ event }: Args) => event.type === 'delivery_failed' && nonEmpty(event.reason),
  writerGone: ({ event }: Args) =>
    event.type === 'delivery_interrupted' && !event.writerStillWriting && nonEmpty(event.reason),
};

export function createDeliveryContext(input: DeliveryInput): DeliveryContext {
  return {
    runId: input.runId,
    occurrenceId: input.occurrenceId,
    automationId: input.automationId,
    target: input.target,
    attemptId: input.attemptId,
    writer: null,
    pendingSince: null,
    digest: null,
    reason: null,
    settledAt: null,
  };
}

/** Context after a committed delivery transition. */
export function applyDeliveryEvent(context: DeliveryContext, event: DeliveryEvent): DeliveryContext {
  switch (event.type) {
    case 'delivery_started':
      return { ...context, writer: event.writer, pendingSince: event.now };
    case 'delivery_committed':
      return { ...context, digest: event.digest, settledAt: event.now };
    case 'delivery_failed':
    case 'delivery_interrupted':
      return { ...context, reason: event.reason, settledAt: event.now };
  }
}
