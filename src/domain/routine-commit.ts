import { OccurrenceState } from '../../machines/index.js';
import { loadOccurrence } from './entities.js';
import type { StepContext } from './lifecycle.js';
import { stateOf } from './records.js';

/**
 * Marks the step's commit routine (`StoreTransaction.routine`) when it leaves its occurrence with nothing for a
 * pass to act on: its session running (observed at the engine's observation interval) or the occurrence settled
 * for good. A retry (planned again), a refusal or a recovery is left to wake the pass as every commit does.
 *
 * @example
 * ```ts
 * await svc.step(async (step) => {
 *   await settleOnExit(svc, step, attemptId, sessionId, exit);
 *   await routineWhenSettledOrRunning(step, occurrenceId);
 * });
 * ```
 */
export async function routineWhenSettledOrRunning(step: StepContext, occurrenceId: string): Promise<void> {
  if (step.tx.routine === undefined) return;
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  if (occurrence.terminal || stateOf(occurrence) === OccurrenceState.running) step.tx.routine();
}
