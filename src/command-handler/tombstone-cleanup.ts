import { AttemptState, OccurrenceState } from '../../machines/index.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  attemptContext,
  KINDS,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
} from '../domain/records.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveOutbox, readAttemptLaunch } from '../domain/outbox.js';
import { endRunHold } from '../domain/run-hold.js';
import { OutboxState } from '../../machines/extension-states.js';
import { settleRunCancelled } from './run-cancellation.js';

const TOMBSTONED = 'definition tombstoned';

/**
 * Withdraws the latest attempt's launch when it has not been handed to a runtime yet, and settles an adopted
 * or dispatching attempt cancelled. Returns false, changing nothing, when the launch is already under way.
 */
async function withdrawUnlaunchedAttempt(step: StepContext, occurrenceId: string, attemptId: string): Promise<boolean> {
  const attempt = await loadAttempt(step.tx, attemptId);
  const attemptState = stateOf(attempt);
  const outbox = await readAttemptLaunch(step.tx, attemptId, attemptContext(attempt).dispatchGeneration);
  if (outbox !== undefined && outbox.state !== OutboxState.pending && attemptState === AttemptState.dispatching)
    return false;
  if (outbox !== undefined && outbox.state === OutboxState.pending) {
    await moveOutbox(step, outbox.id, {
      type: 'outbox_work_cancelled',
      actor: 'command_handler',
      occurrenceId,
      reason: 'definition_tombstoned',
    });
  }
  if (attemptState === AttemptState.adopted || attemptState === AttemptState.dispatching) {
    const cancellation =
      attemptState === AttemptState.adopted
        ? { requestedAt: step.now }
        : { requestedAt: step.now, reconciledAt: step.now };
    await moveEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
      (a) => ({ ...a, stateReason: TOMBSTONED, settledAt: step.now }),
    );
  }
  return true;
}

/** Ends the occurrence's run hold and settles it cancelled, reconciled in the tombstone's commit. */
async function settleOccurrenceTombstoned(step: StepContext, occurrence: OccurrenceRecord): Promise<void> {
  const cancellation = { requestedAt: step.now, reconciledAt: step.now };
  await endRunHold(step, occurrence, { type: 'hold_run_cancelled', actor: 'command_handler' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
    (a) => ({
      ...a,
      stateReason: TOMBSTONED,
      cancellation,
      updatedAt: step.now,
    }),
  );
}

/**
 * Cancels one planned, eligible or claimed occurrence with its run and unlaunched attempt. Returns false,
 * changing nothing, when its launch is already under way.
 */
async function cancelUnlaunchedOccurrence(step: StepContext, occurrence: OccurrenceRecord): Promise<boolean> {
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId !== undefined) {
    const run = await loadRun(step.tx, runId);
    const attemptId = run.data.attributes.attemptIds.at(-1);
    if (attemptId !== undefined && !(await withdrawUnlaunchedAttempt(step, occurrence.id, attemptId))) return false;
    await settleRunCancelled(step, run, TOMBSTONED);
  }
  await settleOccurrenceTombstoned(step, occurrence);
  return true;
}

/**
 * tombstone-preserves-history: a tombstoned definition never plans, claims or runs. Its occurrences that
 * have not launched anything are cancelled in the tombstone's own commit (their records stay readable);
 * work already handed to a runtime continues to its evidence, as only the runtime can stop it.
 * Returns the occurrence ids cancelled.
 */
export async function cancelUnlaunchedWork(step: StepContext, automationId: string): Promise<string[]> {
  const cancelled: string[] = [];
  for (const { id } of await step.tx.liveWork(KINDS.occurrence, { automationId })) {
    const occurrence = (await step.tx.get<OccurrenceRecord['data']>(KINDS.occurrence, id)) as
      OccurrenceRecord | undefined;
    if (occurrence === undefined) continue;
    const state = stateOf(occurrence);
    if (state !== OccurrenceState.planned && state !== OccurrenceState.eligible && state !== OccurrenceState.claimed)
      continue;
    if (await cancelUnlaunchedOccurrence(step, occurrence)) cancelled.push(id);
  }
  return cancelled;
}
