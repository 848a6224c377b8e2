import { endRunHoldOf } from '../domain/run-hold.js';
import { AttemptState, RunState } from '../../machines/index.js';
import { loadAttempt } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { recordReceipt } from '../domain/receipts.js';
import {
  attemptContext,
  stateOf,
  type AttemptAttributes,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunAttributes,
  type RunRecord,
} from '../domain/records.js';
import type { ActorServices } from '../domain/actor-steps.js';

/**
 * A launch was sent and its sender is gone before the runtime answered: the attempt is ambiguous (with its
 * receipt). When the runtime's evidence rules side effects out, the run settles ambiguous too; otherwise it
 * stays running for the operator's recovery.
 */
export async function recordUnconfirmedDispatch(
  svc: ActorServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  run: RunRecord,
  attemptId: string,
  sideEffectsRuledOut: boolean,
): Promise<void> {
  if (stateOf(await loadAttempt(step.tx, attemptId)) === AttemptState.dispatching) {
    await moveEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      { type: 'dispatch_unconfirmed', actor: 'dispatcher', acknowledged: false },
      (a) => ({ ...a, stateReason: 'dispatch sent but not acknowledged before lease expiry', settledAt: step.now }),
    );
    const settled = await loadAttempt(step.tx, attemptId);
    await recordReceipt(step, svc.runtime(settled.data.attributes.runtimeId), occurrence, run, settled, {
      disposition: stateOf(settled),
      detail: settled.data.attributes.stateReason,
      recoveryDisposition: sideEffectsRuledOut ? 'not_required' : 'deferred_to_operator',
    });
  }
  if (!sideEffectsRuledOut) return;
  const attempt = await loadAttempt(step.tx, attemptId);
  if (stateOf(run) === RunState.running && stateOf(attempt) === AttemptState.ambiguous) {
    await settleRunAmbiguous(step, run, attempt, 'launch unconfirmed');
  }
}

/** The run whose latest attempt is ambiguous settles ambiguous, once its recovery was determined. */
export async function settleRunAmbiguous(
  step: StepContext,
  run: RunRecord,
  attempt: AttemptRecord,
  reason: string,
  detail?: string,
): Promise<void> {
  await endRunHoldOf(step, run.id, { type: 'hold_run_settled', actor: 'dispatcher' });
  await moveEntity<RunAttributes>(
    step,
    'run',
    run.id,
    {
      type: 'attempt_ambiguous',
      actor: 'dispatcher',
      attempt: { attemptId: attempt.id, attemptNumber: attemptContext(attempt).attemptNumber, state: 'ambiguous' },
      operatorRecoveryResolved: false,
    },
    (a) => ({
      ...a,
      stateReason: reason,
      finishedAt: step.now,
      terminalDisposition: {
        outcome: 'ambiguous',
        failureClass: 'ambiguous_evidence',
        ...(detail === undefined ? {} : { detail }),
      },
    }),
  );
}
