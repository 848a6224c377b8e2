import { OccurrenceState, RunState } from '../../machines/index.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { recordReceipt } from '../domain/receipts.js';
import { endRunHold } from '../domain/run-hold.js';
import {
  attemptContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
  type RunRecord,
} from '../domain/records.js';
import type { ActorServices } from '../domain/actor-steps.js';

/** The run of an acknowledged cancellation settles cancelled, its hold (if it ever had one) with it. */
async function settleRunCancelled(step: StepContext, run: RunRecord, occurrence: OccurrenceRecord): Promise<void> {
  await endRunHold(step, occurrence, { type: 'hold_run_cancelled', actor: 'command_handler' });
  if (stateOf(run) !== RunState.running) return;
  await moveEntity<RunAttributes>(
    step,
    'run',
    run.id,
    { type: 'cancel_acknowledged', actor: 'command_handler' },
    (x) => ({
      ...x,
      stateReason: 'cancelled on request',
      finishedAt: step.now,
      terminalDisposition: { outcome: 'cancelled', failureClass: 'cancelled_by_request' },
    }),
  );
}

/** The runtime acknowledged a requested cancellation: attempt, run and occurrence settle cancelled. */
export async function acknowledgeCancellation(
  svc: ActorServices,
  step: StepContext,
  attemptId: string,
  sessionId: string,
): Promise<void> {
  const attempt = await loadAttempt(step.tx, attemptId);
  const a = attemptContext(attempt);
  const requestedAt = attempt.data.attributes.cancelRequestedAt ?? step.now;
  const cancellation = { requestedAt, acknowledgedAt: step.now };
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
    (x) => ({ ...x, stateReason: 'cancellation acknowledged by runtime', settledAt: step.now }),
  );
  const run = await loadRun(step.tx, a.runId);
  const occurrence = await loadOccurrence(step.tx, a.occurrenceId);
  await recordReceipt(
    step,
    svc.runtime(attempt.data.attributes.runtimeId),
    occurrence,
    run,
    await loadAttempt(step.tx, attemptId),
    {
      disposition: 'cancelled',
      detail: `session ${sessionId} stopped on request`,
      recoveryDisposition: 'not_required',
    },
  );
  await settleRunCancelled(step, run, occurrence);
  if (stateOf(occurrence) === OccurrenceState.running) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrence.id,
      { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
      (x) => ({
        ...x,
        stateReason: 'cancellation acknowledged by runtime',
        cancellation: { ...(x.cancellation ?? { requestedAt }), acknowledgedAt: step.now },
        updatedAt: step.now,
      }),
    );
  }
}
