import { AttemptState, RunState } from '../../machines/index.js';
import { OutboxState } from '../../machines/extension-states.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import type { LaunchOutcome } from '../domain/launch-outcome.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { moveOutbox, PENDING_LAUNCH, readOutbox } from '../domain/outbox.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import { storeStream } from '../changefeed/event-envelope.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import {
  KINDS,
  attemptContext,
  runContext,
  type AttemptAttributes,
  type AttemptRecord,
  sessionKeyOf,
  stateOf,
  type OutboxEntry,
  type RunAttributes,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { LaunchRequest, LaunchResult, Observation } from '../runtime/runtime.js';
import { checkAuthority, refuseDispatch } from './authority-gate.js';
import { pinnedDefinition } from './pinned-definition.js';
import { applyLaunchResult } from './launch-answer.js';
import { routineWhenSettled } from '../domain/routine-commit.js';
import { integrityProblem } from './launch-integrity.js';
import { integrityQuarantine, quarantineAutomation } from './quarantine.js';

/**
 * Releases one committed launch: marks it `sending` and the run `running` (adoption committed before the
 * side effect), calls the runtime, and commits what it answered. A throw from the runtime leaves the launch
 * `sending`: it may have happened, so only lease expiry and recovery may decide, never a blind retry.
 * When `exitCued` says the runtime cued the session's end before the launch answered, the session is observed
 * and an exit it reports is settled in the answer's own commit (one durable write for both, not two).
 */
export async function releaseLaunch(
  svc: EngineServices,
  outboxId: string,
  exitCued: () => boolean = () => false,
): Promise<LaunchOutcome> {
  // Marked before `sending` is committed, so no reader ever sees this launch sent and unowned.
  svc.launchesInFlight.add(outboxId);
  try {
    return await sendAndApply(svc, outboxId, exitCued);
  } finally {
    svc.launchesInFlight.delete(outboxId);
  }
}

/**
 * Marks a launch queued in the caller's transaction `sending` in that same transaction (a manual run commits its
 * claim, acceptance and send as one), owned by this engine from before the commit so no reader ever sees it sent
 * and unowned. Once the transaction is durable {@link sendMarkedLaunch} sends it; if it rolls back,
 * {@link disownLaunch} drops the ownership. Undefined when there is nothing to send (the marking is then dropped).
 */
export async function markLaunchSending(
  svc: EngineServices,
  step: StepContext,
  outboxId: string,
): Promise<SendingLaunch | undefined> {
  svc.launchesInFlight.add(outboxId);
  // Queued in this same transaction, under the authority judged there: nothing can land in between.
  const prepared = await startSending(svc, step, outboxId, false).catch((error: unknown) => {
    svc.launchesInFlight.delete(outboxId);
    throw error;
  });
  if (prepared === undefined) svc.launchesInFlight.delete(outboxId);
  return prepared;
}

/** Sends a launch whose `sending` mark committed ({@link markLaunchSending}), and commits what the runtime answered. */
export async function sendMarkedLaunch(
  svc: EngineServices,
  outboxId: string,
  sending: SendingLaunch,
  exitCued: () => boolean = () => false,
): Promise<LaunchOutcome> {
  try {
    return await sendPrepared(svc, outboxId, sending, exitCued);
  } finally {
    svc.launchesInFlight.delete(outboxId);
  }
}

/** The transaction that marked a launch `sending` did not commit: this engine no longer answers for it. */
export function disownLaunch(svc: EngineServices, outboxId: string): void {
  svc.launchesInFlight.delete(outboxId);
}

async function sendAndApply(svc: EngineServices, outboxId: string, exitCued: () => boolean): Promise<LaunchOutcome> {
  const prepared = await svc.step((step) => startSending(svc, step, outboxId));
  if (prepared === undefined) return { outboxId, result: { outcome: 'skipped', detail: 'nothing to launch' } };
  return sendPrepared(svc, outboxId, prepared, exitCued);
}

async function sendPrepared(
  svc: EngineServices,
  outboxId: string,
  prepared: Prepared,
  exitCued: () => boolean,
): Promise<LaunchOutcome> {
  const integrity = integrityProblem(prepared.definition, prepared.pinnedDigest);
  let result: LaunchResult;
  if (integrity !== undefined) {
    result = { outcome: 'failed', failureClass: 'launch_refused', detail: integrity.message };
  } else {
    const sent = await sendLaunch(svc, prepared, sessionKeyOf(outboxId, prepared.outbox));
    if (sent.outcome === 'unconfirmed') return { outboxId, result: sent };
    result = sent;
  }
  const refused = integrity === undefined ? undefined : integrityQuarantine(prepared.definition, integrity);
  const exit = result.outcome === 'started' && exitCued() ? await exitOf(svc, prepared, result.sessionId) : undefined;
  const apply = (settle: typeof exit) =>
    svc.step(async (step) => {
      await prefetchAnswer(step, outboxId, prepared);
      const sessionKey = sessionKeyOf(outboxId, prepared.outbox);
      const exhausted = await applyLaunchResult(svc, step, outboxId, result, sessionKey);
      const settled =
        settle !== undefined &&
        (await svc.actors.worker.settleOnExit(svc, step, prepared.attempt.id, settle.sessionId, settle));
      const request = refused ?? exhausted;
      if (request !== undefined) await quarantineAutomation(step, request);
      // Running counts only while no exit was heard: one heard and left unsettled is a pass's to settle.
      else if (result.outcome === 'started') await routineWhenSettled(step, prepared.outbox.occurrenceId, !settle);
      return { request, settled };
    });
  // The answer must not wait on the settle: if the two together fail, the answer commits alone and the exit is
  // settled the ordinary way (the cue's own observation, or a pass).
  const applied = await apply(exit).catch((error: unknown) => {
    if (exit === undefined) throw error;
    return apply(undefined);
  });
  return {
    outboxId,
    result,
    ...(applied.request === undefined ? {} : { quarantine: applied.request }),
    ...(applied.settled ? { exitSettled: true } : {}),
    ...(integrity === undefined ? {} : { error: integrity }),
  };
}

/**
 * Commits the launch `sending` (and its run `running` on the first attempt), with where its runtime keeps the
 * evidence, before the runtime is called, and gathers what the call needs. A launch no longer pending, or whose
 * attempt left `dispatching`, is abandoned.
 */
async function startSending(
  svc: EngineServices,
  step: StepContext,
  outboxId: string,
  judgeAuthority = true,
): Promise<Prepared | undefined> {
  const outbox = await readOutbox(step.tx, outboxId);
  if (outbox === undefined || outbox.state !== OutboxState.pending) return undefined;
  const attempt = await loadAttempt(step.tx, outbox.entry.attemptId);
  const attemptState = stateOf(attempt);
  if (attemptState !== AttemptState.dispatching) {
    await moveOutbox(step, outboxId, { type: 'outbox_release_abandoned', actor: 'dispatcher', attemptState });
    return undefined;
  }
  const { occurrenceId, runId, attemptId } = outbox.entry;
  // Authority is judged again at release: a revocation may land between the dispatch commit and this send.
  const refusal = judgeAuthority ? await checkAuthority(step, { occurrenceId, runId, attemptId }) : undefined;
  if (refusal !== undefined) {
    await refuseDispatch(step, { occurrenceId, runId, attemptId }, refusal);
    await moveOutbox(step, outboxId, {
      type: 'outbox_release_abandoned',
      actor: 'dispatcher',
      attemptState: AttemptState.failed,
    });
    return undefined;
  }
  const run = await loadRun(step.tx, runId);
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const sent = await markSending(svc, step, outboxId, attempt);
  if (stateOf(run) === RunState.accepted) {
    await moveEntity<RunAttributes>(
      step,
      'run',
      run.id,
      {
        type: 'attempt_started',
        actor: 'dispatcher',
        attemptId: attempt.id,
        attemptNumber: attemptContext(attempt).attemptNumber,
        adoptionCommittedAt: attempt.data.attributes.openedAt,
        launchIssuedAt: step.now,
      },
      (a) => ({ ...a, stateReason: 'launch_issued' }),
    );
  }
  const { automationId, automationRevision, definitionDigest } = occurrence.data.attributes;
  const definition = await pinnedDefinition(step, automationId, automationRevision);
  return {
    outbox: sent.entry,
    attempt,
    definition,
    deadlineAt: runContext(run).deadlineAt,
    pinnedDigest: definitionDigest.value,
  };
}

/**
 * Marks a launch `sending`, with where its runtime keeps the evidence (only a runtime that can read it may later
 * decide the launch), and names this engine the attempt's worker in the same commit. Other engines judge whether
 * a launch is orphaned by its worker's owner lease: a launch re-sent after its first sender died (an orphan
 * proven never started) still named the dead sender, so a third engine fenced the live resend as never started
 * and its refused answer failed the run.
 */
async function markSending(svc: EngineServices, step: StepContext, outboxId: string, attempt: AttemptRecord) {
  if (attempt.data.attributes.workerCorrelation?.workerId !== svc.instanceId)
    await updateEntityAttributes<AttemptAttributes>(step.tx, KINDS.attempt, attempt.id, attempt.version, (a) => ({
      ...a,
      workerCorrelation: { ...a.workerCorrelation, workerId: svc.instanceId },
    }));
  const evidenceLocation = svc.runtime(attempt.data.attributes.runtimeId)?.evidenceLocation;
  return moveOutbox(step, outboxId, {
    type: 'outbox_send_started',
    actor: 'dispatcher',
    attemptState: AttemptState.dispatching,
    ...(evidenceLocation === undefined ? {} : { evidenceLocation }),
  });
}

/** What the runtime reports of a session cued as ended, when that is an exit (anything else waits for a pass). */
async function exitOf(svc: EngineServices, prepared: Prepared, sessionId: string) {
  let observation: Observation;
  try {
    observation = await svc.runtime(prepared.attempt.data.attributes.runtimeId)!.observe(sessionId, svc.clock.now());
  } catch {
    return undefined;
  }
  return observation.status === 'exited' ? { ...observation, sessionId } : undefined;
}

/** Calls the runtime; a throw means the launch may or may not have happened. */
async function sendLaunch(
  svc: EngineServices,
  prepared: Prepared,
  sessionKey: string,
): Promise<LaunchResult | { outcome: 'unconfirmed'; detail: string }> {
  const runtime = svc.runtime(prepared.attempt.data.attributes.runtimeId);
  if (runtime === undefined) {
    return {
      outcome: 'failed',
      failureClass: 'launch_refused',
      detail: `no runtime ${prepared.attempt.data.attributes.runtimeId} is registered`,
    };
  }
  let result: LaunchResult;
  try {
    result = await runtime.launch(launchRequestOf(prepared, sessionKey), svc.clock.now());
  } catch (error) {
    return { outcome: 'unconfirmed', detail: (error as Error).message };
  }
  return result;
}

/** A launch marked `sending` and what its runtime call needs (opaque outside the dispatcher). */
export type SendingLaunch = Prepared;

/**
 * What committing a launch's answer reads, and settling its exit in the same commit: asked for at once, where
 * each read is a round trip (see `StoreTransaction.prefetch`). The body may run twice (see
 * `PrefetchOptions.recentCommits`): it only reads and writes through its step.
 */
async function prefetchAnswer(step: StepContext, outboxId: string, prepared: Prepared): Promise<void> {
  const { attemptId, runId, occurrenceId } = prepared.outbox;
  const { automationId, revision } = prepared.definition;
  await step.tx.prefetch?.(
    [
      [KINDS.outbox, outboxId],
      [PENDING_LAUNCH, outboxId],
      [KINDS.attempt, attemptId],
      [KINDS.run, runId],
      [KINDS.occurrence, occurrenceId],
      [KINDS.runHold, runId],
      [DEFINITION_REVISION_KIND, revisionId(automationId, revision)],
    ],
    [storeStream({ kind: 'run', id: runId }), storeStream({ kind: 'occurrence', id: occurrenceId })],
    // All of it but a hold was written or read by the commit that marked the launch sending, moments ago.
    { appending: true, recentCommits: { absentUnlessRemembered: [[KINDS.runHold, runId]] } },
  );
}

type Prepared = {
  outbox: OutboxEntry;
  attempt: Awaited<ReturnType<typeof loadAttempt>>;
  definition: AutomationDefinition;
  deadlineAt: string;
  pinnedDigest?: string;
};

function launchRequestOf(prepared: Prepared, sessionKey: string): LaunchRequest {
  const { definition } = prepared;
  return {
    sessionKey,
    automationId: definition.automationId,
    occurrenceId: prepared.outbox.occurrenceId,
    runId: prepared.outbox.runId,
    attemptId: prepared.attempt.id,
    attemptNumber: attemptContext(prepared.attempt).attemptNumber,
    prompt: definition.action.prompt,
    ...(definition.action.cwd === undefined ? {} : { cwd: definition.action.cwd }),
    ...(definition.runtimeRequirements?.model === undefined ? {} : { model: definition.runtimeRequirements.model }),
    deadlineAt: prepared.deadlineAt,
  };
}
