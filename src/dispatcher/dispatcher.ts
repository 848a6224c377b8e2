import { busyElsewhere } from '../domain/concurrency.js';
import { AttemptState, OccurrenceState } from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { sha256Hex } from '../contract/digest.js';
import { storeStream } from '../changefeed/event-envelope.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { attemptIdFor, attemptKeyFor, runIdFor } from '../domain/ids.js';
import { createExecutionEntity, moveEntity, type StepContext } from '../domain/lifecycle.js';
import { createOutbox } from '../domain/outbox.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
} from '../domain/records.js';
import { isRunHeld } from '../domain/run-hold.js';
import { checkAuthority, refuseDispatch } from './authority-gate.js';
import { pinnedDefinition } from './pinned-definition.js';
import type { EngineServices } from '../domain/services.js';

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
  // Another engine is dispatching or advancing it now: one of them will, under the fence.
  if (await busyElsewhere(svc, step.tx, KINDS.occurrence, occurrenceId)) return undefined;
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  if (!(await isDispatchDue(step, occurrence))) return undefined;
  let runId = occurrence.data.attributes.activeRunRef;
  let attemptId: string | undefined;
  if (runId === undefined) {
    await prefetchAcceptance(step, occurrence);
    runId = runIdFor(occurrenceId);
    attemptId = await acceptRun(step, occurrence, runId);
  } else {
    attemptId = await adoptedAttemptOf(step, runId);
    if (attemptId === undefined) return undefined;
  }
  const dispatchGeneration = await moveToDispatching(svc, step, occurrence, attemptId);
  const gated = { occurrenceId, runId, attemptId };
  // Runtime Authority, decided in this transaction, after the claim and before anything is queued to launch.
  const refusal = await checkAuthority(step, gated);
  if (refusal !== undefined) {
    await refuseDispatch(step, gated, refusal);
    return undefined;
  }
  return createOutbox(step, { attemptId, occurrenceId, runId, dispatchGeneration, committedAt: step.now });
}

/** An occurrence is due for dispatch when claimed (past its retry backoff) or recovering, and its run is not held. */
async function isDispatchDue(step: StepContext, occurrence: OccurrenceRecord): Promise<boolean> {
  const state = stateOf(occurrence);
  const { notBefore } = occurrence.data.attributes;
  if (state !== OccurrenceState.claimed && state !== OccurrenceState.dispatching) return false;
  if (await isRunHeld(step.tx, occurrence)) return false;
  return !(
    state === OccurrenceState.claimed &&
    notBefore !== undefined &&
    Date.parse(notBefore) > Date.parse(step.now)
  );
}

/** The run's latest attempt, when it is still only adopted (a retry opened it); otherwise nothing to dispatch. */
async function adoptedAttemptOf(step: StepContext, runId: string): Promise<string | undefined> {
  const run = await loadRun(step.tx, runId);
  const attemptId = run.data.attributes.attemptIds.at(-1)!;
  const attempt = await loadAttempt(step.tx, attemptId);
  return stateOf(attempt) === AttemptState.adopted ? attemptId : undefined;
}

/**
 * What accepting the occurrence's run reads beyond the occurrence, asked for at once (see
 * `StoreTransaction.prefetch`): the pinned revision and the head of the occurrence's stream.
 */
async function prefetchAcceptance(step: StepContext, occurrence: OccurrenceRecord): Promise<void> {
  const { automationId, automationRevision } = occurrence.data.attributes;
  await step.tx.prefetch?.(
    [[DEFINITION_REVISION_KIND, revisionId(automationId, automationRevision)]],
    [storeStream({ kind: 'occurrence', id: occurrence.id })],
    { appending: true },
  );
}

/** First dispatch of an occurrence: accepts its run under the current fence and adopts attempt 1. */
async function acceptRun(step: StepContext, occurrence: OccurrenceRecord, runId: string): Promise<string> {
  const attributes = occurrence.data.attributes;
  const definition = await pinnedDefinition(step, attributes.automationId, attributes.automationRevision);
  const runtimeId = definition.runtimeRequirements?.runtimeId ?? 'coven-code';
  await createAcceptedRun(step, occurrence, runId, definition, runtimeId);
  return adoptFirstAttempt(step, occurrence, runId, runtimeId);
}

/** Records the fence's one acceptance and creates the run `accepted`, bound to the pinned definition. */
async function createAcceptedRun(
  step: StepContext,
  occurrence: OccurrenceRecord,
  runId: string,
  definition: AutomationDefinition,
  runtimeId: string,
): Promise<void> {
  const o = occurrenceContext(occurrence);
  const attributes = occurrence.data.attributes;
  // one-fence-one-run: the acceptance is keyed by the fence generation; a second one conflicts.
  await step.tx.put(
    KINDS.fenceRun,
    `${occurrence.id}#${o.fence.generation}`,
    { runId, acceptedAt: step.now },
    { expectedVersion: null, terminal: true },
  );
  await createExecutionEntity<RunAttributes>(
    step,
    'run',
    runId,
    {
      runId,
      occurrenceId: occurrence.id,
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
}

/** Adopts attempt 1 under its global adoption key and links it to the run, and the run to the occurrence. */
async function adoptFirstAttempt(
  step: StepContext,
  occurrence: OccurrenceRecord,
  runId: string,
  runtimeId: string,
): Promise<string> {
  const o = occurrenceContext(occurrence);
  const attemptId = attemptIdFor(runId, 1);
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
      occurrenceId: occurrence.id,
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
    occurrence.id,
    occurrence.version,
    (a) => ({ ...a, activeRunRef: runId, updatedAt: step.now }),
  );
  return attemptId;
}

/** Moves the adopted attempt to `dispatching` under the next dispatch generation; returns that generation. */
async function moveToDispatching(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  attemptId: string,
): Promise<number> {
  const attempt = await loadAttempt(step.tx, attemptId);
  const dispatchGeneration = attemptContext(attempt).dispatchGeneration + 1;
  const fenceGeneration =
    stateOf(occurrence) === OccurrenceState.claimed
      ? occurrenceContext(occurrence).fence.generation
      : attemptContext(attempt).fenceGeneration;
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    { type: 'dispatch', actor: 'dispatcher', dispatchGeneration, fenceGeneration },
    (a) => ({
      ...a,
      stateReason: 'dispatching',
      workerCorrelation: { workerId: svc.instanceId, adoptedAt: a.openedAt },
    }),
  );
  return dispatchGeneration;
}
