import { AttemptState, OccurrenceState, RunState } from '../../machines/index.js';
import { liveOccurrencesOf, moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
} from '../domain/records.js';
import { attemptContext } from '../domain/records.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveOutbox, readAttemptLaunch } from '../domain/outbox.js';
import { endRunHold } from '../domain/run-hold.js';
import { OutboxState } from '../../machines/extension-states.js';

/**
 * tombstone-preserves-history: a tombstoned definition never plans, claims or runs. Its occurrences that
 * have not launched anything are cancelled in the tombstone's own commit (their records stay readable);
 * work already handed to a runtime continues to its evidence, as only the runtime can stop it.
 * Returns the occurrence ids cancelled.
 */
export async function cancelUnlaunchedWork(step: StepContext, automationId: string): Promise<string[]> {
  const cancelled: string[] = [];
  for (const id of await liveOccurrencesOf(step.tx, automationId)) {
    const occurrence = (await step.tx.get<OccurrenceRecord['data']>(KINDS.occurrence, id)) as
      OccurrenceRecord | undefined;
    if (occurrence === undefined) continue;
    const state = stateOf(occurrence);
    if (state !== OccurrenceState.planned && state !== OccurrenceState.eligible && state !== OccurrenceState.claimed)
      continue;
    const runId = occurrence.data.attributes.activeRunRef;
    if (runId !== undefined) {
      const run = await loadRun(step.tx, runId);
      const attemptId = run.data.attributes.attemptIds.at(-1);
      if (attemptId !== undefined) {
        const attempt = await loadAttempt(step.tx, attemptId);
        const attemptState = stateOf(attempt);
        const outbox = await readAttemptLaunch(step.tx, attemptId, attemptContext(attempt).dispatchGeneration);
        if (outbox !== undefined && outbox.state !== OutboxState.pending && attemptState === AttemptState.dispatching)
          continue;
        if (outbox !== undefined && outbox.state === OutboxState.pending) {
          await moveOutbox(step, outbox.id, {
            type: 'outbox_work_cancelled',
            actor: 'command_handler',
            occurrenceId: id,
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
            (a) => ({ ...a, stateReason: 'definition tombstoned', settledAt: step.now }),
          );
        }
      }
      if (stateOf(run) === RunState.accepted || stateOf(run) === RunState.running) {
        await moveEntity<RunAttributes>(
          step,
          'run',
          runId,
          { type: 'cancel_acknowledged', actor: 'command_handler' },
          (a) => ({
            ...a,
            stateReason: 'definition tombstoned',
            finishedAt: step.now,
            terminalDisposition: {
              outcome: 'cancelled',
              failureClass: 'cancelled_by_request',
              detail: 'definition tombstoned',
            },
          }),
        );
      }
    }
    const cancellation = { requestedAt: step.now, reconciledAt: step.now };
    await endRunHold(step, occurrence, { type: 'hold_run_cancelled', actor: 'command_handler' });
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      id,
      { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
      (a) => ({
        ...a,
        stateReason: 'definition tombstoned',
        cancellation,
        updatedAt: step.now,
      }),
    );
    cancelled.push(id);
  }
  return cancelled;
}
