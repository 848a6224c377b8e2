import { AttemptState, OccurrenceState, RunState } from '../../machines/index.js';
import { OutboxState } from '../../machines/extension-states.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import type { QuarantineRequest } from '../domain/launch-outcome.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { moveOutbox, readOutbox } from '../domain/outbox.js';
import {
  attemptContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type RunAttributes,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { LaunchEvidenceLocation } from '../guards/outbox.js';
import type { LaunchResult } from '../runtime/runtime.js';
import { afterPreOwnershipFailure } from './settlement.js';

type StartedLaunch = Extract<LaunchResult, { outcome: 'started' }>;
type RefusedLaunch = Exclude<LaunchResult, StartedLaunch>;
/** The ids a committed launch carries, and its attempt's terms. */
type LaunchParties = {
  attemptId: string;
  occurrenceId: string;
  runId: string;
  attempt: ReturnType<typeof attemptContext>;
};

/**
 * Commits the runtime's answer to a launch (or the evidence that stands for it), given for `sessionKey`: the
 * outbox machine applies only an answer for its current send.
 */
export async function applyLaunchResult(
  svc: EngineServices,
  step: StepContext,
  outboxId: string,
  result: LaunchResult,
  sessionKey: string,
): Promise<QuarantineRequest | undefined> {
  const outbox = await readOutbox(step.tx, outboxId);
  if (outbox === undefined || outbox.state !== OutboxState.sending) return undefined;
  await moveOutbox(step, outboxId, { type: 'outbox_answer_applied', actor: 'dispatcher', sessionKey });
  const { attemptId, occurrenceId, runId } = outbox.entry;
  const attempt = await loadAttempt(step.tx, attemptId);
  if (stateOf(attempt) !== AttemptState.dispatching) return undefined;
  const parties: LaunchParties = { attemptId, occurrenceId, runId, attempt: attemptContext(attempt) };
  if (result.outcome === 'started') {
    await applyRuntimeStarted(svc, step, parties, result, outbox.entry.evidenceLocation);
    return undefined;
  }
  return applyLaunchRefused(step, parties, result);
}

/** The runtime owns a session: the attempt, and the occurrence (adopting the attempt first if claimed), start. */
async function applyRuntimeStarted(
  svc: EngineServices,
  step: StepContext,
  { attemptId, occurrenceId, attempt: a }: LaunchParties,
  result: StartedLaunch,
  evidenceLocation: LaunchEvidenceLocation | undefined,
): Promise<void> {
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    {
      type: 'runtime_started',
      actor: 'dispatcher',
      sessionId: result.sessionId,
      dispatchGeneration: a.dispatchGeneration,
    },
    (x) => ({
      ...x,
      stateReason: 'runtime_started',
      workerCorrelation: { ...(x.workerCorrelation ?? { workerId: 'unknown' }), sessionId: result.sessionId },
      ...(evidenceLocation === undefined ? {} : { evidenceLocation }),
    }),
  );
  if (result.cursors.eventCursor !== undefined || result.cursors.logCursor !== undefined) {
    await svc.actors.worker.openEvidenceStream(step, attemptId, result.sessionId, result.cursors);
  }
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  if (stateOf(occurrence) === OccurrenceState.claimed) {
    await moveEntity<OccurrenceAttributes>(step, 'occurrence', occurrenceId, {
      type: 'attempt_adopted',
      actor: 'dispatcher',
      attemptId,
      attemptNumber: a.attemptNumber,
      adoptionKey: a.adoptionKey,
      fenceGeneration: a.fenceGeneration,
    });
  }
  if (stateOf(await loadOccurrence(step.tx, occurrenceId)) === OccurrenceState.dispatching) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrenceId,
      { type: 'runtime_started', actor: 'dispatcher', attemptId, sessionId: result.sessionId },
      (x) => ({
        ...x,
        stateReason: 'runtime_started',
        updatedAt: step.now,
      }),
    );
  }
}

/**
 * The runtime refused the launch before owning anything: the attempt fails pre-ownership; a recovery attempt
 * settles its occurrence and run, a claimed occurrence goes to the retry policy.
 */
async function applyLaunchRefused(
  step: StepContext,
  parties: LaunchParties,
  result: RefusedLaunch,
): Promise<QuarantineRequest | undefined> {
  const { attemptId, occurrenceId, runId } = parties;
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    { type: 'launch_refused', actor: 'dispatcher', failure: { failureClass: result.failureClass, preOwnership: true } },
    (x) => ({
      ...x,
      stateReason: result.detail.slice(0, 500),
      failureClass: result.failureClass,
      settledAt: step.now,
    }),
  );
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  if (stateOf(occurrence) === OccurrenceState.dispatching) {
    await settleRefusedRecovery(step, parties, result);
    return undefined;
  }
  return afterPreOwnershipFailure(step, occurrenceId, runId, attemptId, result.failureClass, result.detail);
}

/** Operator recovery attempts dispatch from `dispatching`: a refusal there settles the occurrence and its run. */
async function settleRefusedRecovery(
  step: StepContext,
  { attemptId, occurrenceId, runId, attempt: a }: LaunchParties,
  result: RefusedLaunch,
): Promise<void> {
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    {
      type: 'launch_refused',
      actor: 'dispatcher',
      failure: { failureClass: result.failureClass, preOwnership: true },
    },
    (x) => ({
      ...x,
      stateReason: `launch_refused: ${result.detail}`.slice(0, 500),
      updatedAt: step.now,
    }),
  );
  const run = await loadRun(step.tx, runId);
  if (stateOf(run) !== RunState.running) return;
  await moveEntity<RunAttributes>(
    step,
    'run',
    runId,
    {
      type: 'attempt_settled',
      actor: 'dispatcher',
      attempt: { attemptId, attemptNumber: a.attemptNumber, state: 'failed' },
      furtherAttemptOpens: false,
    },
    (x) => ({
      ...x,
      stateReason: 'recovery attempt refused',
      finishedAt: step.now,
      terminalDisposition: {
        outcome: 'failed',
        failureClass: 'launch_refused',
        detail: result.detail.slice(0, 500),
      },
    }),
  );
}
