import { AttemptState, DefinitionState, OccurrenceState, RunState } from '../../machines/index.js';
import { busyElsewhere } from '../domain/concurrency.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import type { PlannableDefinition } from '../domain/definition-directory.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { cancelsOther, liveWorkInTheWay, olderWaiting, skipOverlapping, waitsItsTurn } from './waiting-slots.js';
import { newerWaiting, requestCancelOther } from './cancel-other.js';
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
import { isQuarantined, notFound, type EngineServices } from '../domain/services.js';
import { launchOrphaned } from '../domain/owner-lease.js';
import { sideEffectsRuledOut, type SideEffectFacts } from '../guards/occurrence.js';
import { stopOwnedByCancellation } from '../guards/stop-ownership.js';
import { recordReceipt } from '../domain/receipts.js';
import { heldBackByLimits, waitsForCommit, type ClaimPath } from './flow-claims.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { readAttemptLaunch } from '../domain/outbox.js';
import { endRunHold, isRunHeld, moveRunHold } from '../domain/run-hold.js';
import { OutboxState } from '../../machines/extension-states.js';

/** A session the scheduler decided to stop; stopped after the decision is durable. */
export interface SessionStop {
  runtimeId: string;
  sessionId: string;
}

const SKIP_FOR_STATE: Record<string, 'skipped_paused' | 'skipped_invalid'> = {
  paused: 'skipped_paused',
  disabled: 'skipped_paused',
  tombstoned: 'skipped_paused',
  draft: 'skipped_invalid',
  invalid: 'skipped_invalid',
};

const touch =
  (now: string, reason: string) =>
  (a: OccurrenceAttributes): OccurrenceAttributes => ({ ...a, stateReason: reason, updatedAt: now });

/**
 * Planned and eligible occurrences of a definition that is no longer active, or was revised before the
 * claim, are disposed of with the reason; a retry cycle (activeRunRef set) continues regardless, since
 * its run already exists and is bounded by its own deadline.
 */
async function disposeIfStale(
  step: StepContext,
  occurrence: OccurrenceRecord,
  definition: PlannableDefinition,
): Promise<boolean> {
  if (occurrence.data.attributes.activeRunRef !== undefined) return false;
  const state = definition.state;
  const quarantined = await isQuarantined(step.tx, definition.id);
  if (state !== DefinitionState.active || quarantined) {
    const disposition = quarantined ? 'skipped_paused' : (SKIP_FOR_STATE[state] ?? 'skipped_paused');
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrence.id,
      { type: 'misfire', actor: 'scheduler', disposition },
      (a) => ({
        ...touch(step.now, quarantined ? 'definition quarantined' : `definition ${state}`)(a),
        misfireDisposition: disposition,
      }),
    );
    return true;
  }
  const revision = definition.terms.revision;
  if (revision > occurrence.data.attributes.automationRevision) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrence.id,
      { type: 'definition_superseded', actor: 'scheduler', currentRevision: revision },
      touch(step.now, `superseded by revision ${revision}`),
    );
    return true;
  }
  return false;
}

/**
 * The state and revision of an occurrence's definition as `tx` holds them, from the engine's directory while
 * the record's version is current: a claim checks both, and reading and parsing the whole definition (a few
 * KB) for it was a tenth of a 1000-claim phase.
 */
async function definitionOf(
  svc: EngineServices,
  step: StepContext,
  automationId: string,
): Promise<PlannableDefinition> {
  const definition = await svc.definitions.inTransaction(step.tx, automationId);
  if (definition === undefined) throw notFound('definition', automationId);
  return definition;
}

/**
 * A planned or eligible occurrence: eligibility, then the claim (overlap forbid), unless its definition is
 * no longer active or was revised. Only this step reads the definition; every other live occurrence is
 * advanced without it. On the planning path an occurrence that finds the automation's work live stays eligible
 * instead of being skipped: planning uses it, since that live work may be past its deadline, for the pass's
 * advance phase to settle before it decides on the overlap.
 *
 * @returns whether it claimed the occurrence.
 */
export async function claimWhenEligible(
  svc: EngineServices,
  step: StepContext,
  planned: OccurrenceRecord,
  path: ClaimPath = 'advance',
): Promise<boolean> {
  let occurrence = planned;
  const occurrenceId = occurrence.id;
  const attributes = occurrence.data.attributes;
  const now = Date.parse(step.now);
  // Once, before either transition: nothing the eligibility transition writes changes what it checks.
  const definition = await definitionOf(svc, step, attributes.automationId);
  if (await disposeIfStale(step, occurrence, definition)) return false;

  if (stateOf(occurrence) === OccurrenceState.planned) {
    if (Date.parse(attributes.scheduledFor) > now) return false;
    if (attributes.notBefore !== undefined && Date.parse(attributes.notBefore) > now) return false;
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrenceId,
      { type: 'eligibility_passed', actor: 'scheduler' },
      (a) => ({ ...touch(step.now, 'eligibility_passed')(a), eligibleAt: step.now }),
    );
    occurrence = await loadOccurrence(step.tx, occurrenceId);
  }

  const waits = waitsItsTurn(occurrence, definition);
  if (waits && (await olderWaiting(step.tx, occurrence, now))) return waitsForCommit(svc, step, occurrence, definition);
  const replaces =
    cancelsOther(definition) && attributes.activeRunRef === undefined && attributes.backfill === undefined;
  if (replaces && (await newerWaiting(step.tx, occurrence, now)))
    return skipOverlapping(step, occurrenceId, 'a newer slot of the automation is due and replaces it');
  const live = await liveWorkInTheWay(step.tx, occurrence, waits);
  if (live !== undefined) {
    // A backfilled slot, or one whose automation's slots wait while it is busy (overlap extension), stays
    // eligible: it runs next.
    if (waits) return waitsForCommit(svc, step, occurrence, definition);
    if (attributes.activeRunRef !== undefined || path === 'planning') return false;
    // cancel-other: the live run is asked to cancel, and this slot runs once it has.
    if (replaces) {
      await requestCancelOther(svc, step, live);
      return false;
    }
    // overlap forbid: a slot that comes due while the automation has live work is skipped, with the reason.
    return skipOverlapping(step, occurrenceId, 'overlap forbidden: the automation has live work');
  }
  if (await heldBackByLimits(svc, step, occurrence, definition, path !== 'advance')) return false;
  const leaseExpiresAt = svc.leaseExpiresAt(now);
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    {
      type: 'claim',
      actor: 'scheduler',
      expectedGeneration: occurrenceContext(occurrence).fence.generation,
      claimedBy: svc.instanceId,
      leaseExpiresAt,
    },
    (a) => ({
      ...touch(step.now, `claimed by ${svc.instanceId}`)(a),
      claimMetadata: { claimedAt: step.now, leaseMinutes: svc.leaseMinutes },
    }),
  );
  return true;
}

/**
 * One scheduler step for one occurrence, inside its own transaction: eligibility, claim (overlap forbid),
 * lease expiry and recovery determination, held-run deadlines, timeouts.
 */
export async function advanceOccurrence(
  svc: EngineServices,
  step: StepContext,
  occurrenceId: string,
  stops: SessionStop[],
  evidenceUndecided: ReadonlySet<string> = new Set(),
): Promise<void> {
  // Another engine on the same store is advancing it right now: its commit decides, this pass moves on.
  if (await busyElsewhere(svc, step.tx, KINDS.occurrence, occurrenceId)) return;
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const now = Date.parse(step.now);
  let state = stateOf(occurrence);
  if (state === OccurrenceState.planned || state === OccurrenceState.eligible) {
    await claimWhenEligible(svc, step, occurrence);
    return;
  }

  const o = occurrenceContext(occurrence);
  const deadlinePassed = o.deadlineAt !== null && Date.parse(o.deadlineAt) <= now;

  if (await isRunHeld(step.tx, occurrence)) {
    if (deadlinePassed) {
      await moveRunHold(step, occurrence, { type: 'hold_deadline_expired', actor: 'scheduler' });
      await svc.actors.dispatcher.settleExpiredHold(step, occurrence);
    }
    return;
  }

  if (
    (state === OccurrenceState.claimed || state === OccurrenceState.dispatching) &&
    !o.runtimeEvidenceRecorded &&
    o.fence.leaseExpiresAt !== null &&
    Date.parse(o.fence.leaseExpiresAt) < now &&
    (await launchLeftUndecided(svc, step, occurrence, evidenceUndecided))
  ) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrenceId,
      { type: 'lease_expired', actor: 'scheduler' },
      (a) => ({
        ...touch(step.now, 'lease expired without runtime evidence')(a),
        recovery: { enteredAt: step.now, evidence: 'lease_expired' },
      }),
    );
    state = 'recovering';
  }

  if (state === OccurrenceState.recovering) {
    await determineRecovery(svc, step, occurrenceId);
    return;
  }

  const cancellationRequestedAt = occurrence.data.attributes.cancellation?.requestedAt;
  if (
    state === OccurrenceState.running &&
    deadlinePassed &&
    !stopOwnedByCancellation(o.deadlineAt, cancellationRequestedAt, step.now)
  ) {
    await timeOut(svc, step, occurrenceId, stops, cancellationRequestedAt);
  }
}

/**
 * Whether a lapsed claim's lease means anything: its launch was sent, its sender can no longer answer for it,
 * and its runtime, asked in this pass, could not decide it (`evidenceUndecided`). A claim with nothing sent is
 * dispatched under its fence by whichever engine gets to it, never expired; a launch its live sender still
 * waits for is left to it; an orphan not yet asked about (its sender died after this pass asked) is asked next.
 */
async function launchLeftUndecided(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  evidenceUndecided: ReadonlySet<string>,
): Promise<boolean> {
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId === undefined) return false;
  const attemptId = (await loadRun(step.tx, runId)).data.attributes.attemptIds.at(-1);
  if (attemptId === undefined) return false;
  const attempt = await loadAttempt(step.tx, attemptId);
  if (stateOf(attempt) !== AttemptState.dispatching) return false;
  const outbox = await readAttemptLaunch(step.tx, attemptId, attemptContext(attempt).dispatchGeneration);
  if (outbox === undefined || outbox.state !== OutboxState.sending || !evidenceUndecided.has(outbox.id)) return false;
  return launchOrphaned(
    svc,
    step.tx,
    outbox.id,
    attempt.data.attributes.workerCorrelation?.workerId,
    outbox.entry.sentAt,
  );
}

/** What the store proves about the current attempt's launch, and what its runtime can do at most. */
async function sideEffectFacts(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
): Promise<{ facts: SideEffectFacts; attemptId?: string; runId?: string }> {
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId === undefined) return { facts: { launched: false, boundClass: 'none', proven: true } };
  const run = await loadRun(step.tx, runId);
  const attemptId = run.data.attributes.attemptIds.at(-1);
  if (attemptId === undefined) return { facts: { launched: false, boundClass: 'none', proven: true }, runId };
  const attempt = await loadAttempt(step.tx, attemptId);
  const outbox = await readAttemptLaunch(step.tx, attemptId, attemptContext(attempt).dispatchGeneration);
  const launched = outbox !== undefined && (outbox.state === OutboxState.sending || outbox.state === OutboxState.done);
  const runtime = svc.runtime(attempt.data.attributes.runtimeId);
  return {
    facts: {
      launched,
      boundClass: runtime?.sideEffectClass ?? 'irreversible_external_mutation',
      proven: runtime?.sideEffectBoundProven ?? false,
    },
    attemptId,
    runId,
  };
}

/** recovering → failed when no side effect was possible, else → recovery_required for the operator. */
async function determineRecovery(svc: EngineServices, step: StepContext, occurrenceId: string): Promise<void> {
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const { facts, attemptId, runId } = await sideEffectFacts(svc, step, occurrence);
  const ruledOut = sideEffectsRuledOut(facts);
  if (attemptId !== undefined && runId !== undefined) {
    const run = await loadRun(step.tx, runId);
    await svc.actors.dispatcher.recordUnconfirmedDispatch(svc, step, occurrence, run, attemptId, ruledOut);
  }
  if (ruledOut) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrenceId,
      { type: 'recovery_determined', actor: 'scheduler', sideEffects: facts },
      (a) => ({
        ...touch(step.now, 'lease expired; the runtime is proven side-effect free')(a),
        recovery: { ...(a.recovery ?? { enteredAt: step.now }), resolvedDisposition: 'failed_deterministic' },
      }),
    );
  } else {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrenceId,
      { type: 'recovery_ambiguous', actor: 'scheduler', sideEffects: facts },
      (a) => ({
        ...touch(step.now, 'launch unconfirmed: side effects cannot be ruled out; operator recovery required')(a),
        recovery: { enteredAt: a.recovery?.enteredAt ?? step.now, evidence: 'dispatch_unconfirmed' },
      }),
    );
  }
}

/** The run's deadline passed without settled evidence: occurrence, run and attempt time out; the session is stopped. */
async function timeOut(
  svc: EngineServices,
  step: StepContext,
  occurrenceId: string,
  stops: SessionStop[],
  cancellationRequestedAt: string | undefined,
): Promise<void> {
  // Another engine on the same store is advancing it right now: its commit decides, this pass moves on.
  if (await busyElsewhere(svc, step.tx, KINDS.occurrence, occurrenceId)) return;
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const runId = occurrence.data.attributes.activeRunRef;
  await endRunHold(step, occurrence, { type: 'hold_run_timed_out', actor: 'scheduler' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    { type: 'timeout', actor: 'scheduler', settledEvidence: false, cancellationRequestedAt },
    touch(step.now, 'perRunMinutes elapsed without settled evidence'),
  );
  if (runId === undefined) return;
  const run = await loadRun(step.tx, runId);
  if (stateOf(run) === RunState.running) {
    await moveEntity<RunAttributes>(step, 'run', runId, { type: 'timeout', actor: 'scheduler' }, (x) => ({
      ...x,
      stateReason: 'timed out',
      finishedAt: step.now,
      terminalDisposition: { outcome: 'timed_out', failureClass: 'timeout', detail: 'perRunMinutes elapsed' },
    }));
  }
  const attemptId = run.data.attributes.attemptIds.at(-1);
  if (attemptId === undefined) return;
  const attempt = await loadAttempt(step.tx, attemptId);
  const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
  if (stateOf(attempt) === AttemptState.observing) {
    await moveEntity<AttemptAttributes>(step, 'attempt', attemptId, { type: 'timeout', actor: 'scheduler' }, (x) => ({
      ...x,
      stateReason: 'perRunMinutes elapsed',
      settledAt: step.now,
    }));
    await recordReceipt(
      step,
      svc.runtime(attempt.data.attributes.runtimeId),
      occurrence,
      run,
      await loadAttempt(step.tx, attemptId),
      {
        disposition: 'timed_out',
        failureClass: 'timeout',
        detail: 'perRunMinutes elapsed; the session was told to stop',
        recoveryDisposition: 'not_required',
      },
    );
  } else if (stateOf(attempt) === AttemptState.started) {
    await updateEntityAttributes<AttemptAttributes>(step.tx, KINDS.attempt, attemptId, attempt.version, (x) => ({
      ...x,
      cancelRequestedAt: step.now,
    }));
  }
  if (sessionId !== undefined) stops.push({ runtimeId: attempt.data.attributes.runtimeId, sessionId });
}
