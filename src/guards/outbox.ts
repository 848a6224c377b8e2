import { AttemptState } from '../../machines/states.js';
import { nonEmpty, type LifecycleEventBase } from './common.js';

/**
 * Context of x-coven-automata.outbox.v1 (this project's extension, not the contract): one launch committed
 * before it is released to the runtime, stored as record kind 'outbox' under {@link outboxIdOf}.
 */
export interface OutboxContext {
  outboxId: string;
  attemptId: string;
  occurrenceId: string;
  runId: string;
  dispatchGeneration: number;
  committedAt: string;
  /** When the current (or last) send started; null until the first send. */
  sentAt: string | null;
  /** Times a send was proven never started; each one moves the launch to a fresh session key. */
  resends: number;
  /**
   * Where the runtime that took the current send keeps its evidence (the runtime port's `EvidenceLocation`);
   * absent in launches sent before locations were recorded, or by a runtime that names none.
   */
  evidenceLocation?: LaunchEvidenceLocation;
}

/** The runtime port's evidence location, as a launch records it (guards see only the contract's types). */
export interface LaunchEvidenceLocation {
  host: string;
  root: string;
  anyHost?: boolean;
}

export interface OutboxInput {
  attemptId: string;
  occurrenceId: string;
  runId: string;
  dispatchGeneration: number;
  committedAt: string;
  sentAt?: string;
  resends?: number;
}

export type OutboxEvent =
  | (LifecycleEventBase<'outbox_send_started'> & {
      /** The attempt's state as read in the releasing transaction. */
      attemptState: string;
      /** Where the runtime about to take the send keeps its evidence. */
      evidenceLocation?: LaunchEvidenceLocation;
    })
  | (LifecycleEventBase<'outbox_release_abandoned'> & { attemptState: string })
  | (LifecycleEventBase<'outbox_work_cancelled'> & {
      /** The occurrence whose cancel, or whose definition's tombstone cleanup, reached this launch. */
      occurrenceId: string;
      reason: 'occurrence_cancelled' | 'definition_tombstoned';
    })
  | (LifecycleEventBase<'outbox_answer_applied'> & {
      /** The session key the runtime's answer was given for. */
      sessionKey: string;
    })
  | (LifecycleEventBase<'outbox_send_unstarted'> & {
      sessionKey: string;
      /** The runtime's proof: the send never started, and its session key is fenced so it never can. */
      neverStarted: boolean;
      fenced: boolean;
    });

type Args = { context: OutboxContext; event: OutboxEvent };

/** The outbox record id of a launch: one per attempt and dispatch generation. */
export const outboxIdOf = (attemptId: string, dispatchGeneration: number): string =>
  `${attemptId}#${dispatchGeneration}`;

/**
 * The session key the current send goes out under: the outbox id, suffixed after each proven-unstarted send
 * because the runtime fenced the earlier key for good.
 */
export const outboxSessionKey = (context: Pick<OutboxContext, 'outboxId' | 'resends'>): string =>
  context.resends === 0 ? context.outboxId : `${context.outboxId}~${context.resends}`;

/** One pure predicate per x-coven-automata.outbox.v1 guard id in extension-machines.json. */
export const outboxGuards = {
  attemptStillDispatching: ({ event }: Args) =>
    event.type === 'outbox_send_started' && event.attemptState === AttemptState.dispatching,
  attemptNoLongerDispatching: ({ event }: Args) =>
    event.type === 'outbox_release_abandoned' &&
    nonEmpty(event.attemptState) &&
    event.attemptState !== AttemptState.dispatching,
  cancellationNamesLaunch: ({ context, event }: Args) =>
    event.type === 'outbox_work_cancelled' && event.occurrenceId === context.occurrenceId,
  answerForCurrentSend: ({ context, event }: Args) =>
    event.type === 'outbox_answer_applied' && event.sessionKey === outboxSessionKey(context),
  runtimeFencedUnstartedSend: ({ context, event }: Args) =>
    event.type === 'outbox_send_unstarted' &&
    event.sessionKey === outboxSessionKey(context) &&
    event.neverStarted &&
    event.fenced,
};

export function createOutboxContext(input: OutboxInput): OutboxContext {
  return {
    outboxId: outboxIdOf(input.attemptId, input.dispatchGeneration),
    attemptId: input.attemptId,
    occurrenceId: input.occurrenceId,
    runId: input.runId,
    dispatchGeneration: input.dispatchGeneration,
    committedAt: input.committedAt,
    sentAt: input.sentAt ?? null,
    resends: input.resends ?? 0,
  };
}

/** Context after a committed outbox transition. */
export function applyOutboxEvent(context: OutboxContext, event: OutboxEvent): OutboxContext {
  switch (event.type) {
    case 'outbox_send_started': {
      const { evidenceLocation: _previous, ...rest } = context;
      return {
        ...rest,
        sentAt: event.now,
        ...(event.evidenceLocation === undefined ? {} : { evidenceLocation: event.evidenceLocation }),
      };
    }
    case 'outbox_send_unstarted':
      return { ...context, resends: context.resends + 1 };
    default:
      return context;
  }
}
