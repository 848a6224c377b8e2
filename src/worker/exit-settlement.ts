import { AttemptState } from '../../machines/index.js';
import type { ActorServices, ActorSteps } from '../domain/actor-steps.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { attemptContext, stateOf, type AttemptAttributes } from '../domain/records.js';
import { receiptIdFor, recordReceipt } from '../domain/receipts.js';
import type { TerminalEvidence } from '../guards/common.js';
import type { Observation } from '../runtime/runtime.js';

/** What a runtime answers `observe` for a session that ended. */
export type ExitObservation = Extract<Observation, { status: 'exited' }>;

/** What settling on an exit needs of the engine: the attempt's runtime (for the receipt) and the other actors. */
export type SettlingServices = ActorServices & { readonly actors: ActorSteps };

/**
 * An exited session settles its started attempt, in the caller's transaction: a cancellation the runtime
 * acknowledged settles cancelled; otherwise verified terminal evidence settles the attempt, then (through the
 * dispatcher) its run and occurrence, with the receipt in the same commit. False when the attempt is no longer
 * started or observing: someone settled it first, and the machine would refuse a second settle anyway.
 */
export async function settleOnExit(
  svc: SettlingServices,
  step: StepContext,
  attemptId: string,
  sessionId: string,
  observation: ExitObservation,
): Promise<boolean> {
  const attempt = await loadAttempt(step.tx, attemptId);
  const state = stateOf(attempt);
  if (state !== AttemptState.started && state !== AttemptState.observing) return false;
  // Only the runtime's word makes a cancellation acknowledged: a session that ran to its own end after a
  // cancel was requested settles by its evidence (completion won the race).
  if (observation.cancelled && state === AttemptState.observing) {
    await svc.actors.commandHandler.acknowledgeCancellation(svc, step, attemptId, sessionId);
    return true;
  }
  await settleByEvidence(svc, step, attempt, sessionId, observation);
  return true;
}

async function settleByEvidence(
  svc: SettlingServices,
  step: StepContext,
  attempt: Awaited<ReturnType<typeof loadAttempt>>,
  sessionId: string,
  observation: ExitObservation,
): Promise<void> {
  const a = attemptContext(attempt);
  const run = await loadRun(step.tx, a.runId);
  const occurrence = await loadOccurrence(step.tx, a.occurrenceId);
  const runtime = svc.runtime(attempt.data.attributes.runtimeId);
  const evidence: TerminalEvidence & { outputDigest?: string } = {
    sessionId,
    outcome: observation.outcome,
    exitCode: observation.exitCode,
    verified: true,
    ...(observation.outputDigest === undefined ? {} : { outputDigest: observation.outputDigest }),
  };
  const settledAttempt = await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attempt.id,
    { type: 'run_settled', actor: 'worker', evidence },
    (x) => ({
      ...x,
      evidence,
      stateReason:
        observation.outcome === 'succeeded'
          ? 'verified completion evidence'
          : `verified failure evidence (exit ${String(observation.exitCode)})`,
      settledAt: step.now,
    }),
  );
  // The occurrence and run settle first; the receipt is written in the same commit, so nothing can observe
  // either settled without it, and the changefeed reads settled -> finished -> sealed.
  const receiptId = receiptIdFor(attempt.id);
  await svc.actors.dispatcher.afterTerminalEvidence(step, occurrence.id, run.id, attempt.id, evidence, receiptId);
  await recordReceipt(
    step,
    runtime,
    occurrence,
    run,
    settledAttempt.record as Awaited<ReturnType<typeof loadAttempt>>,
    {
      disposition: settledAttempt.to,
      ...(settledAttempt.to === AttemptState.failed ? { failureClass: 'runtime_error' } : {}),
      detail:
        settledAttempt.to === AttemptState.succeeded
          ? 'verified completion evidence'
          : `exit ${String(observation.exitCode)}`,
      recoveryDisposition: 'not_required',
    },
    observation.outputDigest,
  );
}
