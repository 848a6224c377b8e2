import { AttemptState, OCCURRENCE_LIVE_STATES, OccurrenceState } from '../../machines/index.js';
import { OutboxState } from '../../machines/extension-states.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { ContractError } from '../contract/errors.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { moveOutbox, readAttemptLaunch } from '../domain/outbox.js';
import {
  KINDS,
  attemptContext,
  runContext,
  stateOf,
  type AttemptAttributes,
  type AttemptRecord,
  type OccurrenceAttributes,
  type OccurrenceRecord,
} from '../domain/records.js';
import { endRunHold } from '../domain/run-hold.js';
import type { EngineServices } from '../domain/services.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commandStep, getOccurrence, getRun, notFound } from './operator-lookups.js';
import { settleRunCancelled } from './run-cancellation.js';

function cancelPending(what: string, details: Record<string, unknown>): ContractError {
  return new ContractError(
    'CANCEL_PENDING',
    `${what}: cancellation requested; it completes when the runtime acknowledges`,
    details,
    { retryable: true },
  );
}

/** An occurrence in recovery is resolved by occurrence.recover.v1, and a settled one has nothing left to cancel. */
function requireCancellable(occurrenceId: string, state: OccurrenceState): void {
  if (state === OccurrenceState.recovery_required || state === OccurrenceState.recovering) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} is ${state}: resolve it with occurrence.recover.v1`,
      { occurrenceId, state },
    );
  }
  if (!OCCURRENCE_LIVE_STATES.has(state)) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} already settled ${state}; completion won`,
      { occurrenceId, state },
    );
  }
}

/**
 * A session exists (or may): the request is recorded once, the session is told to stop after the commit,
 * and the answer is CANCEL_PENDING until the runtime acknowledges.
 */
async function requestSessionStop(
  svc: EngineServices,
  ctx: CommandContext,
  occurrence: OccurrenceRecord,
  attempt: AttemptRecord,
): Promise<CommandOutcome> {
  const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
  if (attempt.data.attributes.cancelRequestedAt === undefined) {
    await updateEntityAttributes<AttemptAttributes>(ctx.tx, KINDS.attempt, attempt.id, attempt.version, (a) => ({
      ...a,
      cancelRequestedAt: ctx.now,
    }));
    const requestedBy = ctx.envelope.origin.principal;
    await updateEntityAttributes<OccurrenceAttributes>(
      ctx.tx,
      KINDS.occurrence,
      occurrence.id,
      occurrence.version,
      (a) => ({ ...a, cancellation: { requestedAt: ctx.now, requestedBy }, updatedAt: ctx.now }),
    );
  }
  const runtime = svc.runtime(attempt.data.attributes.runtimeId);
  return {
    result: {},
    rejectAfterCommit: cancelPending(`attempt ${attempt.id} is running`, {
      occurrenceId: occurrence.id,
      attemptId: attempt.id,
      requestedAt: attempt.data.attributes.cancelRequestedAt ?? ctx.now,
    }),
    afterCommit: async () => {
      if (runtime !== undefined && sessionId !== undefined) await runtime.cancel(sessionId, svc.clock.now());
    },
  };
}

/**
 * A dispatching attempt: while its launch is being sent the request is recorded and the answer is
 * CANCEL_PENDING; otherwise its pending launch is withdrawn and the attempt settles cancelled now.
 * Returns the CANCEL_PENDING outcome, or undefined once the attempt is settled.
 */
async function cancelDispatchingAttempt(
  ctx: CommandContext,
  step: StepContext,
  occurrenceId: string,
  attempt: AttemptRecord,
  reason: string,
): Promise<CommandOutcome | undefined> {
  const outbox = await readAttemptLaunch(ctx.tx, attempt.id, attemptContext(attempt).dispatchGeneration);
  if (outbox?.state === OutboxState.sending) {
    if (attempt.data.attributes.cancelRequestedAt === undefined) {
      await updateEntityAttributes<AttemptAttributes>(ctx.tx, KINDS.attempt, attempt.id, attempt.version, (a) => ({
        ...a,
        cancelRequestedAt: ctx.now,
      }));
    }
    return {
      result: {},
      rejectAfterCommit: cancelPending(`attempt ${attempt.id} is being launched`, {
        occurrenceId,
        attemptId: attempt.id,
      }),
    };
  }
  if (outbox?.state === OutboxState.pending) {
    await moveOutbox(step, outbox.id, {
      type: 'outbox_work_cancelled',
      actor: 'command_handler',
      occurrenceId,
      reason: 'occurrence_cancelled',
    });
  }
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attempt.id,
    {
      type: 'cancel_acknowledged',
      actor: 'command_handler',
      cancellation: { requestedAt: ctx.now, reconciledAt: ctx.now },
    },
    (a) => ({ ...a, stateReason: reason, settledAt: ctx.now }),
  );
  return undefined;
}

/** An adopted attempt never reached a runtime: it settles cancelled at once. */
async function cancelAdoptedAttempt(step: StepContext, attempt: AttemptRecord, reason: string): Promise<void> {
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attempt.id,
    { type: 'cancel_acknowledged', actor: 'command_handler', cancellation: { requestedAt: step.now } },
    (a) => ({ ...a, stateReason: reason, settledAt: step.now }),
  );
}

/** Ends the occurrence's run hold and settles the occurrence cancelled, acknowledged at once when it was running. */
async function settleOccurrenceCancelled(
  ctx: CommandContext,
  step: StepContext,
  occurrence: OccurrenceRecord,
  reason: string,
): Promise<void> {
  const requestedBy = ctx.envelope.origin.principal;
  const cancellation = {
    requestedAt: ctx.now,
    reconciledAt: ctx.now,
    ...(stateOf(occurrence) === OccurrenceState.running ? { acknowledgedAt: ctx.now } : {}),
  };
  await endRunHold(step, occurrence, { type: 'hold_run_cancelled', actor: 'command_handler' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
    (a) => ({
      ...a,
      stateReason: reason,
      cancellation: { ...cancellation, requestedBy },
      updatedAt: ctx.now,
    }),
  );
}

/**
 * The shared cancellation of an occurrence's work. Nothing dispatched yet: settled cancelled at once.
 * A running session: the request is committed, the session told to stop after the commit, and the answer
 * is CANCEL_PENDING until the runtime acknowledges (the worker then settles everything cancelled).
 */
async function cancelOccurrenceWork(
  svc: EngineServices,
  ctx: CommandContext,
  occurrenceId: string,
): Promise<CommandOutcome> {
  const s = commandStep(ctx);
  const occurrence = await getOccurrence(ctx, occurrenceId);
  const state = stateOf(occurrence);
  const reason = (ctx.envelope.payload.reason as string | undefined) ?? 'cancelled on request';
  const runId = occurrence.data.attributes.activeRunRef;
  const cancelled: CommandOutcome = {
    result: { occurrenceId, ...(runId === undefined ? {} : { runId }), status: 'cancelled', requestedAt: ctx.now },
    automationId: occurrence.data.attributes.automationId,
  };
  if (state === OccurrenceState.cancelled) return cancelled;
  requireCancellable(occurrenceId, state);
  const run = runId === undefined ? undefined : await loadRun(ctx.tx, runId);
  const attemptId = run?.data.attributes.attemptIds.at(-1);
  const attempt = attemptId === undefined ? undefined : await loadAttempt(ctx.tx, attemptId);
  const attemptState = attempt === undefined ? undefined : stateOf(attempt);

  if (attempt !== undefined && (attemptState === AttemptState.started || attemptState === AttemptState.observing)) {
    return requestSessionStop(svc, ctx, occurrence, attempt);
  }
  if (attempt !== undefined && attemptState === AttemptState.dispatching) {
    const pending = await cancelDispatchingAttempt(ctx, s, occurrenceId, attempt, reason);
    if (pending !== undefined) return pending;
  } else if (attempt !== undefined && attemptState === AttemptState.adopted) {
    await cancelAdoptedAttempt(s, attempt, reason);
  }
  if (run !== undefined) await settleRunCancelled(s, run, reason);
  await settleOccurrenceCancelled(ctx, s, occurrence, reason);
  return cancelled;
}

/** occurrence.cancel.v1: cancels the named occurrence's work. */
export function cancelOccurrence(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  return cancelOccurrenceWork(svc, ctx, ctx.envelope.payload.occurrenceId as string);
}

/** run.cancel.v1: cancels the work of the occurrence the run belongs to. */
export async function cancelRun(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  const run = await getRun(ctx, ctx.envelope.payload.runId as string);
  return cancelOccurrenceWork(svc, ctx, runContext(run).occurrenceId);
}

/** attempt.cancel.v1: only the current attempt of its run is cancelled, which cancels its occurrence's work. */
export async function cancelAttempt(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  const attemptId = ctx.envelope.payload.attemptId as string;
  const attempt = await ctx.tx.get<AttemptRecord['data']>(KINDS.attempt, attemptId);
  if (attempt === undefined) throw notFound('attempt', attemptId);
  const a = attemptContext(attempt as AttemptRecord);
  const run = await getRun(ctx, a.runId);
  if (run.data.attributes.attemptIds.at(-1) !== attemptId) {
    throw new ContractError('ILLEGAL_TRANSITION', `attempt ${attemptId} is not the current attempt of run ${a.runId}`, {
      attemptId,
      runId: a.runId,
    });
  }
  return cancelOccurrenceWork(svc, ctx, a.occurrenceId);
}
