import { AttemptState } from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import type { StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import { waitingSiblings } from './waiting-slots.js';

/** Who a cancellation the overlap extension's cancel-other asks for is recorded as requested by. */
export const SCHEDULER_PRINCIPAL = { principalId: 'coven-automata:scheduler' };

/**
 * Whether a newer slot of the automation is due and waiting too: under cancel-other the newest due slot is the one
 * that runs, so an older waiting one gives way (skipped as overlapping) instead of starting only to be cancelled.
 * Backfilled slots are not "newer": they wait their turn and replace nothing.
 */
export async function newerWaiting(tx: StepContext['tx'], occurrence: OccurrenceRecord, now: number): Promise<boolean> {
  for (const work of await waitingSiblings(tx, occurrence, now, 'after'))
    if ((await loadOccurrence(tx, work.id)).data.attributes.backfill === undefined) return true;
  return false;
}

/**
 * cancel-other: asks the live run of the automation to cancel, as an operator's cancel does — the request recorded
 * on its attempt and occurrence once, the session told to stop after the commit — and the runtime's acknowledgment
 * settles it cancelled (cancellation is a request). Only a scheduled slot's run is cancelled this way (not a
 * manual or backfilled one), and only once its session started; before that the waiting slot asks again on a
 * later pass. Nothing is asked when the step cannot send the stop after its commit.
 */
export async function requestCancelOther(svc: EngineServices, step: StepContext, liveId: string): Promise<void> {
  const afterCommit = step.afterCommit;
  if (afterCommit === undefined) return;
  const live = await loadOccurrence(step.tx, liveId);
  const a = live.data.attributes;
  if (a.triggerIdentity.kind !== 'schedule.slot' || a.backfill !== undefined || a.activeRunRef === undefined) return;
  const attemptId = (await loadRun(step.tx, a.activeRunRef)).data.attributes.attemptIds.at(-1);
  if (attemptId === undefined) return;
  const attempt = await loadAttempt(step.tx, attemptId);
  const state = stateOf(attempt);
  if ((state !== AttemptState.started && state !== AttemptState.observing) || attempt.data.attributes.cancelRequestedAt)
    return;
  await updateEntityAttributes<AttemptAttributes>(step.tx, KINDS.attempt, attempt.id, attempt.version, (x) => ({
    ...x,
    cancelRequestedAt: step.now,
  }));
  await updateEntityAttributes<OccurrenceAttributes>(step.tx, KINDS.occurrence, live.id, live.version, (x) => ({
    ...x,
    cancellation: { requestedAt: step.now, requestedBy: SCHEDULER_PRINCIPAL },
    updatedAt: step.now,
  }));
  const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
  const runtime = svc.runtime(attempt.data.attributes.runtimeId);
  if (sessionId !== undefined && runtime !== undefined)
    afterCommit.push(() => void runtime.cancel(sessionId, svc.clock.now()).catch(() => undefined));
}
