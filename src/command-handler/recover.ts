import { AttemptState, DefinitionState, OccurrenceState, RunState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  attemptContext,
  occurrenceContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import { readDefinitionRecord, type EngineServices } from '../domain/services.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commandStep, getOccurrence, requireAttemptBudget, requireBeforeDeadline } from './operator-lookups.js';

/** The operator's determination and the statement that backs it. */
interface RecoveryDetermination {
  evidenceDetermination: string;
  statement: string;
}

/** The run an occurrence in recovery holds open, and that run's latest attempt, when there are any. */
interface RecoveryWork {
  run: RunRecord | undefined;
  latest: AttemptRecord | undefined;
}

const runningWithAmbiguousLatest = (work: RecoveryWork): work is { run: RunRecord; latest: AttemptRecord } =>
  work.run !== undefined &&
  work.latest !== undefined &&
  stateOf(work.run) === RunState.running &&
  stateOf(work.latest) === AttemptState.ambiguous;

async function recoveryWorkOf(ctx: CommandContext, occurrence: OccurrenceRecord): Promise<RecoveryWork> {
  const runId = occurrence.data.attributes.activeRunRef;
  const run = runId === undefined ? undefined : await loadRun(ctx.tx, runId);
  const latestId = run?.data.attributes.attemptIds.at(-1);
  const latest = latestId === undefined ? undefined : await loadAttempt(ctx.tx, latestId);
  return { run, latest };
}

/**
 * The operator determined the work failed: the occurrence settles failed through operator_recovery_failed,
 * and a running run whose latest attempt is ambiguous settles with it.
 */
async function settleRecoveryFailed(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  work: RecoveryWork,
  determination: RecoveryDetermination,
): Promise<void> {
  const { evidenceDetermination, statement } = determination;
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    { type: 'operator_recovery_failed', actor: 'command_handler', evidenceDetermination, statement },
    (a) => ({
      ...a,
      stateReason: `operator determined failed: ${statement}`.slice(0, 500),
      recovery: { ...(a.recovery ?? { enteredAt: step.now }), resolvedDisposition: 'failed_deterministic' },
      updatedAt: step.now,
    }),
  );
  if (runningWithAmbiguousLatest(work)) {
    const reason = 'operator determined failure after ambiguous evidence';
    await svc.actors.dispatcher.settleRunAmbiguous(step, work.run, work.latest, reason, statement.slice(0, 500));
  }
}

/**
 * Opens the attempt after the ambiguous one under a fresh lease and fence, and moves the occurrence to
 * dispatching through operator_recovery_attempt. Returns the new attempt.
 */
async function openRecoveryAttempt(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  work: { run: RunRecord; latest: AttemptRecord },
  determination: RecoveryDetermination,
): Promise<AttemptRecord> {
  const o = occurrenceContext(occurrence);
  const latestNumber = attemptContext(work.latest).attemptNumber;
  const leaseExpiresAt = svc.leaseExpiresAt(step.now);
  const next = await svc.actors.dispatcher.openAttempt(step, work.run, occurrence, {
    attemptNumber: latestNumber + 1,
    fenceGeneration: o.fence.generation + 1,
    leaseExpiresAt,
    prior: { attemptNumber: latestNumber, outcome: 'ambiguous' },
    classification: 'operator_recovery',
    runtimeId: work.latest.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    {
      type: 'operator_recovery_attempt',
      actor: 'command_handler',
      evidenceDetermination: determination.evidenceDetermination,
      statement: determination.statement,
      attemptId: next.id,
      attemptNumber: latestNumber + 1,
      adoptionKey: attemptContext(next).adoptionKey,
      priorDisposition: 'ambiguous',
      leaseExpiresAt,
    },
    (a) => ({ ...a, stateReason: `operator recovery: attempt ${latestNumber + 1}`, updatedAt: step.now }),
  );
  return next;
}

/**
 * A new attempt after ambiguous evidence needs a running run whose latest attempt is ambiguous, a deadline
 * still ahead, attempts left and an active definition, checked in that order.
 */
async function requireRecoverableWork(
  ctx: CommandContext,
  occurrence: OccurrenceRecord,
  work: RecoveryWork,
): Promise<{ run: RunRecord; latest: AttemptRecord }> {
  if (!runningWithAmbiguousLatest(work)) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrence.id} has no running run with an ambiguous latest attempt`,
      { occurrenceId: occurrence.id },
    );
  }
  requireBeforeDeadline(work.run.id, occurrenceContext(occurrence), ctx.now);
  requireAttemptBudget(work.run.id, attemptContext(work.latest).attemptNumber);
  const definition = await readDefinitionRecord(ctx.tx, occurrence.data.attributes.automationId);
  if (stateOf(definition) !== DefinitionState.active)
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${definition.id} is not active`, {
      automationId: definition.id,
    });
  return work;
}

/** occurrence.recover.v1: the operator's determination for an occurrence in recovery_required. */
export async function recover(
  svc: EngineServices,
  dispatch: (id: string) => Promise<unknown>,
  ctx: CommandContext,
): Promise<CommandOutcome> {
  const { occurrenceId, evidenceDetermination, statement } = ctx.envelope.payload as {
    occurrenceId: string;
    evidenceDetermination: string;
    statement: string;
  };
  const determination: RecoveryDetermination = { evidenceDetermination, statement };
  const occurrence = await getOccurrence(ctx, occurrenceId);
  if (stateOf(occurrence) !== OccurrenceState.recovery_required) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} is ${stateOf(occurrence)}, not recovery_required`,
      { occurrenceId, state: stateOf(occurrence) },
    );
  }
  const s = commandStep(ctx);
  const work = await recoveryWorkOf(ctx, occurrence);
  const result = { occurrenceId, evidenceDetermination, statement, recoveredAt: ctx.now };
  const automationId = occurrence.data.attributes.automationId;
  if (evidenceDetermination === 'failed_deterministic') {
    await settleRecoveryFailed(svc, s, occurrence, work, determination);
    return { automationId, result: { ...result, status: 'failed' } };
  }
  const recoverable = await requireRecoverableWork(ctx, occurrence, work);
  const next = await openRecoveryAttempt(svc, s, occurrence, recoverable, determination);
  const attemptNumber = attemptContext(recoverable.latest).attemptNumber + 1;
  return {
    automationId,
    result: { ...result, status: 'dispatching', runId: recoverable.run.id, attemptId: next.id, attemptNumber },
    afterCommit: async () => {
      await dispatch(occurrenceId);
    },
  };
}
