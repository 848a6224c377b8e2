import { OccurrenceState } from '../../machines/index.js';
import type { ActorServices, EvidenceLoss, SchedulerSteps } from '../domain/actor-steps.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { recordReceipt } from '../domain/receipts.js';
import { attemptContext, stateOf, type AttemptAttributes, type OccurrenceAttributes } from '../domain/records.js';

/** A manual run's occurrence: eligible at once, and claimed by this engine under a fresh lease. */
async function claimForManualRun(svc: ActorServices, step: StepContext, occurrenceId: string): Promise<string> {
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    { type: 'eligibility_passed', actor: 'scheduler' },
    (a) => ({ ...a, eligibleAt: step.now }),
  );
  const leaseExpiresAt = svc.leaseExpiresAt(step.now);
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    { type: 'claim', actor: 'scheduler', expectedGeneration: 0, claimedBy: svc.instanceId, leaseExpiresAt },
    (a) => ({
      ...a,
      stateReason: `claimed by ${svc.instanceId} for a manual run`,
      claimMetadata: { claimedAt: step.now, leaseMinutes: svc.leaseMinutes },
    }),
  );
  return leaseExpiresAt;
}

/**
 * The runtime no longer knows a started session and holds no terminal evidence: the attempt is ambiguous
 * (with its receipt) and its occurrence waits in recovery_required for the operator.
 */
async function recordEvidenceLost(svc: ActorServices, step: StepContext, loss: EvidenceLoss): Promise<void> {
  const { attemptId, sessionId } = loss;
  await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    {
      type: 'evidence_lost',
      actor: 'scheduler',
      sessionId,
      terminalEvidenceSeen: false,
      evidenceExpiresAt: loss.lastSeen,
    },
    (x) => ({ ...x, stateReason: loss.detail.slice(0, 500), settledAt: step.now }),
  );
  const settled = await loadAttempt(step.tx, attemptId);
  const run = await loadRun(step.tx, attemptContext(settled).runId);
  const occurrence = await loadOccurrence(step.tx, attemptContext(settled).occurrenceId);
  await recordReceipt(step, svc.runtime(settled.data.attributes.runtimeId), occurrence, run, settled, {
    disposition: 'ambiguous',
    detail: loss.detail.slice(0, 500),
    recoveryDisposition: 'deferred_to_operator',
  });
  if (stateOf(occurrence) !== OccurrenceState.running || occurrence.data.attributes.activeRunRef !== run.id) return;
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    { type: 'evidence_lost', actor: 'scheduler', sessionId, terminalEvidenceSeen: false },
    (x) => ({
      ...x,
      stateReason: 'runtime lost mid-run: outcome cannot be determined automatically',
      recovery: { enteredAt: step.now, evidence: 'runtime_lost' },
      updatedAt: step.now,
    }),
  );
}

/** The scheduler's steps that other actors' work reaches (wired by engine.ts). */
export const SCHEDULER_STEPS: SchedulerSteps = { claimForManualRun, recordEvidenceLost };
