import { requireNoAuthorityProfile } from './authority-requirements.js';
import { ATTEMPT_TERMINAL_STATES, AttemptState, DefinitionState, RunState } from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { ContractError } from '../contract/errors.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  runContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
  type RunRecord,
} from '../domain/records.js';
import { isRunHeld, moveRunHold } from '../domain/run-hold.js';
import { isQuarantined, readDefinitionRecord, type EngineServices } from '../domain/services.js';
import type { AttemptDisposition } from '../guards/occurrence.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commandStep, getOccurrence, getRun, requireAttemptBudget, requireBeforeDeadline } from './operator-lookups.js';

/** What the operator asserts about the attempt being retried; it must match the run's latest attempt. */
interface RetryClaim {
  priorAttemptNumber: number;
  priorDisposition: AttemptDisposition;
}

/**
 * The latest attempt of a run may be retried only when it settled non-ambiguously, is the attempt the operator
 * names, and the run has attempts left; an ambiguous one is for occurrence.recover.v1 alone.
 */
function requireRetryableLatest(run: RunRecord, latest: AttemptRecord, claim: RetryClaim): void {
  const runId = run.id;
  const latestState = stateOf(latest);
  const latestNumber = attemptContext(latest).attemptNumber;
  if (latestState === AttemptState.ambiguous || claim.priorDisposition === 'ambiguous') {
    throw new ContractError(
      'AMBIGUOUS_RETRY_FORBIDDEN',
      `attempt ${latest.id} is ambiguous: only occurrence.recover.v1 may open work after it`,
      { runId, attemptId: latest.id },
    );
  }
  if (!ATTEMPT_TERMINAL_STATES.has(latestState))
    throw new ContractError('ILLEGAL_TRANSITION', `attempt ${latest.id} is still ${latestState}`, {
      runId,
      attemptId: latest.id,
      state: latestState,
    });
  if (claim.priorAttemptNumber !== latestNumber || claim.priorDisposition !== latestState) {
    const claimed = `#${claim.priorAttemptNumber} ${claim.priorDisposition}`;
    throw new ContractError(
      'RETRY_DISPOSITION_INVALID',
      `the latest attempt is #${latestNumber} ${latestState}, not ${claimed}`,
      {
        runId,
        latestAttemptNumber: latestNumber,
        latestDisposition: latestState,
      },
    );
  }
  requireAttemptBudget(runId, latestNumber);
}

/** A retry waits until an unresolved cancellation of the occurrence or its latest attempt is settled. */
function requireNoPendingCancellation(runId: string, occurrence: OccurrenceRecord, latest: AttemptRecord): void {
  if (occurrence.data.attributes.cancellation !== undefined || latest.data.attributes.cancelRequestedAt !== undefined) {
    throw new ContractError(
      'CANCEL_PENDING',
      `run ${runId} has an unresolved cancellation`,
      { runId },
      { retryable: true },
    );
  }
}

/** Only an active, unquarantined definition has its runs retried. */
async function requireRetryableDefinition(ctx: CommandContext, automationId: string): Promise<void> {
  const definition = await readDefinitionRecord(ctx.tx, automationId);
  if (stateOf(definition) !== DefinitionState.active || (await isQuarantined(ctx.tx, definition.id))) {
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${definition.id} is not active and unquarantined`, {
      automationId: definition.id,
    });
  }
}

/**
 * Opens attempt n+1 of the held run, returns the occurrence to planned through operator_retry, accepts the
 * retry on the run hold and records it as the run's reason. The new attempt's lease runs to the deadline.
 * Returns the new attempt.
 */
async function openOperatorRetry(
  svc: EngineServices,
  step: StepContext,
  run: RunRecord,
  occurrence: OccurrenceRecord,
  latest: AttemptRecord,
  deadlineAt: string,
): Promise<AttemptRecord> {
  const o = occurrenceContext(occurrence);
  const latestState = stateOf(latest);
  const latestNumber = attemptContext(latest).attemptNumber;
  // The guard's fact is the hold machine's committed state, read before this retry moves anything.
  const runHeld = await isRunHeld(step.tx, occurrence);
  const next = await svc.actors.dispatcher.openAttempt(step, run, occurrence, {
    attemptNumber: latestNumber + 1,
    fenceGeneration: o.fence.generation + 1,
    leaseExpiresAt: deadlineAt,
    prior: { attemptNumber: latestNumber, outcome: latestState as AttemptDisposition },
    classification: 'operator_retry',
    runtimeId: latest.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    {
      type: 'operator_retry',
      actor: 'command_handler',
      runId: run.id,
      priorAttemptNumber: latestNumber,
      priorDisposition: latestState,
      latestAttemptTerminal: true,
      runHeld,
      quarantined: false,
      stopUnresolved: false,
    },
    (a) => ({ ...a, stateReason: `operator retry: attempt ${latestNumber + 1}`, updatedAt: step.now }),
  );
  await moveRunHold(step, occurrence, { type: 'hold_retry_accepted', actor: 'command_handler', attemptId: next.id });
  await updateEntityAttributes<RunAttributes>(
    step.tx,
    KINDS.run,
    run.id,
    (await loadRun(step.tx, run.id)).version,
    (a) => ({ ...a, stateReason: 'operator_retry' }),
  );
  return next;
}

/** attempt.retry.v1: attempt n+1 of a held run; the occurrence returns to planned for the scheduler. */
export async function retryAttempt(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  const { runId, priorAttemptNumber, priorDisposition } = ctx.envelope.payload as {
    runId: string;
    priorAttemptNumber: number;
    priorDisposition: AttemptDisposition;
  };
  const run = await getRun(ctx, runId);
  await requireNoAuthorityProfile(ctx.tx, run, 'attempt.retry.v1');
  if (stateOf(run) !== RunState.running)
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `run ${runId} is ${stateOf(run)}; only a held running run is retried`,
      { runId, state: stateOf(run) },
    );
  const latest = await loadAttempt(ctx.tx, run.data.attributes.attemptIds.at(-1)!);
  requireRetryableLatest(run, latest, { priorAttemptNumber, priorDisposition });
  const occurrence = await getOccurrence(ctx, runContext(run).occurrenceId);
  requireNoPendingCancellation(runId, occurrence, latest);
  const deadlineAt = requireBeforeDeadline(runId, occurrenceContext(occurrence), ctx.now);
  await requireRetryableDefinition(ctx, run.data.attributes.automationId);
  const next = await openOperatorRetry(svc, commandStep(ctx), run, occurrence, latest, deadlineAt);
  const latestNumber = attemptContext(latest).attemptNumber;
  return {
    automationId: run.data.attributes.automationId,
    result: {
      runId,
      occurrenceId: occurrence.id,
      attemptId: next.id,
      attemptNumber: latestNumber + 1,
      priorDisposition: stateOf(latest),
      status: 'planned',
      retriedAt: ctx.now,
    },
  };
}
