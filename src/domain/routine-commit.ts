import { OccurrenceState } from '../../machines/index.js';
import { loadOccurrence } from './entities.js';
import type { StepContext } from './lifecycle.js';
import { stateOf } from './records.js';

/**
 * Marks the step's commit routine (`StoreTransaction.routine`) when it leaves its occurrence with nothing for a
 * pass to act on soon: settled for good, or, with `running` (a launch's answer), running its session, which passes
 * observe at the engine's observation interval. A retry (planned again), a refusal, a recovery or a held run is left
 * to wake the pass as every commit does.
 *
 * @example
 * ```ts
 * await svc.step(async (step) => {
 *   await settleOnExit(svc, step, attemptId, sessionId, exit);
 *   await routineWhenSettled(step, occurrenceId);
 * });
 * ```
 */
export async function routineWhenSettled(step: StepContext, occurrenceId: string, running = false): Promise<void> {
  if (step.tx.routine === undefined) return;
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  if (occurrence.terminal || (running && stateOf(occurrence) === OccurrenceState.running)) step.tx.routine();
}
