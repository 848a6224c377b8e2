import { AttemptState, OccurrenceState, RunState } from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { isContractError } from '../contract/errors.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import { createExecutionEntity, moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  runContext,
  sessionKeyOf,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OutboxEntry,
  type RunAttributes,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { LaunchRequest, LaunchResult } from '../runtime/runtime.js';
import { integrityProblem } from './launch-integrity.js';
import { afterPreOwnershipFailure } from './settlement.js';
import { sha256Hex } from '../contract/digest.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import { runIdFor } from '../domain/ids.js';
import type { LaunchOutcome } from '../domain/launch-outcome.js';
import { createOutbox, moveOutbox, readOutbox } from '../domain/outbox.js';
import { integrityQuarantine, quarantineAutomation } from './quarantine.js';
import { isRunHeld } from '../domain/run-hold.js';
import { OutboxState } from '../../machines/extension-states.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { attemptIdFor, attemptKeyFor } from '../domain/ids.js';
import { type QuarantineRequest } from '../domain/launch-outcome.js';

async function pinnedDefinition(
  step: StepContext,
  automationId: string,
  revision: number,
): Promise<AutomationDefinition> {
  const record = await step.tx.get<AutomationDefinition>(DEFINITION_REVISION_KIND, revisionId(automationId, revision));
  if (record === undefined) throw new Error(`definition ${automationId} has no revision ${revision}`);
  return record.data;
}

/**
 * Accepts the run (first dispatch of an occurrence: one run per fence generation, enforced by a
 * compare-and-set record), adopts or reuses the attempt, moves it to `dispatching`, and queues its launch
 * in the outbox — all in one transaction. Nothing reaches the runtime until this is durable.
 * Returns the outbox id to release, or undefined when the occurrence has nothing to dispatch.
 */
export async function acceptAndDispatch(
  svc: EngineServices,
  step: StepContext,
  occurrenceId: string,
): Promise<string | undefined> {
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const state = stateOf(occurrence);
  const o = occurrenceContext(occurrence);
  const attributes = occurrence.data.attributes;
  if (state !== OccurrenceState.claimed && state !== OccurrenceState.dispatching) return undefined;
  if (await isRunHeld(step.tx, occurrence)) return undefined;
  if (
    state === OccurrenceState.claimed &&
    attributes.notBefore !== undefined &&
    Date.parse(attributes.notBefore) > Date.parse(step.now)
  )
    return undefined;
  let runId = attributes.activeRunRef;
  let attemptId: string;
  if (runId === undefined) {
    const definition = await pinnedDefinition(step, attributes.automationId, attributes.automationRevision);
    runId = runIdFor(occurrenceId);
    // one-fence-one-run: the acceptance is keyed by the fence generation; a second one conflicts.
    await step.tx.put(
      KINDS.fenceRun,
      `${occurrenceId}#${o.fence.generation}`,
      { runId, acceptedAt: step.now },
      { expectedVersion: null, terminal: true },
    );
    const runtimeId = definition.runtimeRequirements?.runtimeId ?? 'coven-code';
    await createExecutionEntity<RunAttributes>(
      step,
      'run',
      runId,
      {
        runId,
        occurrenceId,
        automationId: attributes.automationId,
        automationRevision: attributes.automationRevision,
        fenceGeneration: o.fence.generation,
        deadlineAt: o.deadlineAt!,
        operatorHold: o.operatorHold,
        retryPolicy: o.retryPolicy,
      },
      {
        automationId: attributes.automationId,
        automationRevision: attributes.automationRevision,
        definitionDigest: attributes.definitionDigest,
        binding: {
          familiar: { familiarId: definition.binding.familiarId ?? 'unbound' },
          authority: {
            principal: definition.provenance?.createdBy ?? { principalId: 'unknown' },
            approval: { approvalPolicyRef: definition.binding.authority.approvalPolicyRef },
          },
          runtime: { runtimeId, capabilities: definition.runtimeRequirements?.capabilities ?? [] },
        },
        stateReason: 'accepted',
        startedAt: step.now,
        attemptIds: [],
      },
      'fence_accepted',
    );
    attemptId = attemptIdFor(runId, 1);
    const adoptionKey = attemptKeyFor(runId, 1);
    await step.tx.put(
      'adoption',
      adoptionKey,
      { command: 'attempt.adopt', requestDigest: sha256Hex(attemptId), committedAt: step.now, result: { attemptId } },
      { expectedVersion: null, terminal: true },
    );
    await createExecutionEntity<AttemptAttributes>(
      step,
      'attempt',
      attemptId,
      {
        attemptId,
        runId,
        occurrenceId,
        attemptNumber: 1,
        adoptionKey,
        fenceGeneration: o.fence.generation,
        leaseExpiresAt: o.fence.leaseExpiresAt!,
        deadlineAt: o.deadlineAt!,
      },
      {
        runtimeId,
        retryClassification: { classification: 'initial', eligibleClasses: o.retryPolicy.retryableClasses },
        stateReason: 'adopted',
        openedAt: step.now,
      },
      'adopted',
    );
    await updateEntityAttributes<RunAttributes>(step.tx, KINDS.run, runId, 1, (a) => ({
      ...a,
      attemptIds: [attemptId],
    }));
    await updateEntityAttributes<OccurrenceAttributes>(
      step.tx,
      KINDS.occurrence,
      occurrenceId,
      occurrence.version,
      (a) => ({ ...a, activeRunRef: runId, updatedAt: step.now }),
    );
  } else {
    const run = await loadRun(step.tx, runId);
    attemptId = run.data.attributes.attemptIds.at(-1)!;
    const attempt = await loadAttempt(step.tx, attemptId);
    if (stateOf(attempt) !== AttemptState.adopted) return undefined;
  }
  const attempt = await loadAttempt(step.tx, attemptId);
  const dispatchGeneration = attemptContext(attempt).dispatchGeneration + 1;
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    {
      type: 'dispatch',
      actor: 'dispatcher',
      dispatchGeneration,
      fenceGeneration: state === OccurrenceState.claimed ? o.fence.generation : attemptContext(attempt).fenceGeneration,
    },
    (a) => ({
      ...a,
      stateReason: 'dispatching',
      workerCorrelation: { workerId: svc.instanceId, adoptedAt: a.openedAt },
    }),
  );
  return createOutbox(step, { attemptId, occurrenceId, runId, dispatchGeneration, committedAt: step.now });
}

/**
 * Releases one committed launch: marks it `sending` and the run `running` (adoption committed before the
 * side effect), calls the runtime, and commits what it answered. A throw from the runtime leaves the launch
 * `sending`: it may have happened, so only lease expiry and recovery may decide, never a blind retry.
 */
export async function releaseLaunch(svc: EngineServices, outboxId: string): Promise<LaunchOutcome> {
  // Marked before `sending` is committed, so no reader ever sees this launch sent and unowned.
  svc.launchesInFlight.add(outboxId);
  try {
    return await sendAndApply(svc, outboxId);
  } finally {
    svc.launchesInFlight.delete(outboxId);
  }
}

async function sendAndApply(svc: EngineServices, outboxId: string): Promise<LaunchOutcome> {
  const prepared = await svc.step(async (step) => {
    const outbox = await readOutbox(step.tx, outboxId);
    if (outbox === undefined || outbox.state !== OutboxState.pending) return undefined;
    const attempt = await loadAttempt(step.tx, outbox.entry.attemptId);
    const attemptState = stateOf(attempt);
    if (attemptState !== AttemptState.dispatching) {
      await moveOutbox(step, outboxId, { type: 'outbox_release_abandoned', actor: 'dispatcher', attemptState });
      return undefined;
    }
    const run = await loadRun(step.tx, outbox.entry.runId);
    const occurrence = await loadOccurrence(step.tx, outbox.entry.occurrenceId);
    const sent = await moveOutbox(step, outboxId, { type: 'outbox_send_started', actor: 'dispatcher', attemptState });
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
    const definition = await pinnedDefinition(
      step,
      occurrence.data.attributes.automationId,
      occurrence.data.attributes.automationRevision,
    );
    return {
      outbox: sent.entry,
      attempt,
      definition,
      deadlineAt: runContext(run).deadlineAt,
      pinnedDigest: occurrence.data.attributes.definitionDigest.value,
    };
  });
  if (prepared === undefined) return { outboxId, result: { outcome: 'skipped', detail: 'nothing to launch' } };
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
  const quarantine = await svc.step(async (step) => {
    const exhausted = await applyLaunchResult(svc, step, outboxId, result, sessionKeyOf(outboxId, prepared.outbox));
    const request = refused ?? exhausted;
    if (request !== undefined) await quarantineAutomation(step, request);
    return request;
  });
  return {
    outboxId,
    result,
    ...(quarantine === undefined ? {} : { quarantine }),
    ...(integrity === undefined ? {} : { error: integrity }),
  };
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
  const a = attemptContext(attempt);
  if (result.outcome === 'started') {
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
    return undefined;
  }
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
    // Operator recovery attempts dispatch from `dispatching`: a refusal there settles the occurrence.
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
    if (stateOf(run) === RunState.running) {
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
    return undefined;
  }
  return afterPreOwnershipFailure(step, occurrenceId, runId, attemptId, result.failureClass, result.detail);
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

export function isConflict(error: unknown): boolean {
  return isContractError(error) && (error.code === 'REVISION_CONFLICT' || error.code === 'ILLEGAL_TRANSITION');
}
