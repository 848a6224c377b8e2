import { OccurrenceState, RunState } from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { sha256Hex } from '../contract/digest.js';
import { MAX_ATTEMPTS_PER_RUN, type PreOwnershipFailureClass } from '../contract/vocabulary.js';
import { moveEntity, createExecutionEntity, type StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  runContext,
  stateOf,
  type AttemptAttributes,
  type AttemptRecord,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
  type RunRecord,
} from '../domain/records.js';
import type { TerminalEvidence } from '../guards/common.js';
import { holdWindowOpen, retryExhausted, type OccurrenceContext } from '../guards/occurrence.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { attemptIdFor, attemptKeyFor } from '../domain/ids.js';
import type { QuarantineRequest } from '../domain/launch-outcome.js';
import type { AttemptTerms } from '../domain/actor-steps.js';
import { endRunHold, moveRunHold, type RunHoldSend } from '../domain/run-hold.js';

/**
 * Backoff before retry attempt `n` (n ≥ 2), bounded by the policy: none 0, fixed backoffSeconds,
 * exponential base·2^min(n−2,16) capped at a day, jittered deterministically from the run and attempt:
 * the first 8 bytes of BLAKE3("<runId>:<n>") as a big-endian u64, mod the ceiling, plus one second (the
 * function upstream pins), so replays and other implementations compute the same instant.
 */
export function backoffMs(policy: OccurrenceContext['retryPolicy'], runId: string, n: number): number {
  if (policy.backoffPolicy === 'none') return 0;
  const base = policy.backoffSeconds ?? 30;
  if (policy.backoffPolicy === 'fixed') return base * 1000;
  const ceiling = Math.min(base * 2 ** Math.min(n - 2, 16), 86_400);
  const head = new DataView(blake3(new TextEncoder().encode(`${runId}:${n}`)).buffer).getBigUint64(0, false);
  const jitter = Number(head % BigInt(ceiling)) + 1;
  return jitter * 1000;
}

function retryPermitted(
  context: OccurrenceContext,
  failureClass: PreOwnershipFailureClass,
  notBefore: string,
  attempts: number,
): boolean {
  const policy = context.retryPolicy;
  return (
    failureClass !== 'launch_refused' &&
    !context.ambiguousDisposition &&
    policy.retryableClasses.includes(failureClass) &&
    attempts < Math.min(policy.maxAttempts, MAX_ATTEMPTS_PER_RUN) &&
    context.deadlineAt !== null &&
    Date.parse(notBefore) < Date.parse(context.deadlineAt)
  );
}

/** Opens attempt n+1 of a run, adopted, with its global adoption key. */
export async function openAttempt(
  step: StepContext,
  run: RunRecord,
  occurrence: OccurrenceRecord,
  input: AttemptTerms,
): Promise<AttemptRecord> {
  const attemptId = attemptIdFor(run.id, input.attemptNumber);
  const adoptionKey = attemptKeyFor(run.id, input.attemptNumber);
  // Attempt keys share the command key space: a command can never reuse one, nor one a command's.
  await step.tx.put(
    'adoption',
    adoptionKey,
    { command: 'attempt.adopt', requestDigest: sha256Hex(attemptId), committedAt: step.now, result: { attemptId } },
    { expectedVersion: null, terminal: true },
  );
  const attempt = (await createExecutionEntity<AttemptAttributes>(
    step,
    'attempt',
    attemptId,
    {
      attemptId,
      runId: run.id,
      occurrenceId: occurrence.id,
      attemptNumber: input.attemptNumber,
      adoptionKey,
      fenceGeneration: input.fenceGeneration,
      leaseExpiresAt: input.leaseExpiresAt,
      deadlineAt: runContext(run).deadlineAt,
    },
    {
      runtimeId: input.runtimeId,
      priorDisposition: input.prior,
      retryClassification: { classification: input.classification },
      stateReason: input.classification,
      openedAt: step.now,
      ...(input.notBefore === undefined ? {} : { notBefore: input.notBefore }),
    },
    input.classification,
  )) as AttemptRecord;
  await updateEntityAttributes<RunAttributes>(
    step.tx,
    KINDS.run,
    run.id,
    (await loadRun(step.tx, run.id)).version,
    (a) => ({ ...a, attemptIds: [...a.attemptIds, attemptId] }),
  );
  return attempt;
}

async function settleRunFailed(
  step: StepContext,
  runId: string,
  attemptId: string,
  attemptNumber: number,
  detail: string,
  failureClass: string,
): Promise<void> {
  await moveEntity<RunAttributes>(
    step,
    'run',
    runId,
    {
      type: 'attempt_settled',
      actor: 'dispatcher',
      attempt: { attemptId, attemptNumber, state: 'failed' },
      furtherAttemptOpens: false,
      failureClass,
    },
    (a) => ({
      ...a,
      stateReason: detail,
      finishedAt: step.now,
      terminalDisposition: { outcome: 'failed', failureClass, detail },
    }),
  );
}

/**
 * After an attempt failed before the runtime owned anything, with its occurrence still `claimed`: retry
 * automatically when the pinned policy allows it, else hold the run for an operator retry while its
 * window is open, else settle run and occurrence failed. Returns a quarantine request when a retryable
 * class exhausted the policy.
 */
export async function afterPreOwnershipFailure(
  step: StepContext,
  occurrenceId: string,
  runId: string,
  attemptId: string,
  failureClass: PreOwnershipFailureClass,
  detail: string,
): Promise<QuarantineRequest | undefined> {
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const run = await loadRun(step.tx, runId);
  const attempt = await loadAttempt(step.tx, attemptId);
  const o = occurrenceContext(occurrence);
  const n = attemptContext(attempt).attemptNumber;
  const notBefore = new Date(Date.parse(step.now) + backoffMs(o.retryPolicy, runId, n + 1)).toISOString();
  if (retryPermitted(o, failureClass, notBefore, Math.max(o.attemptCount, n))) {
    await retryAutomatically(step, run, occurrence, attempt, failureClass, notBefore);
    return undefined;
  }
  const attempts = Math.max(o.attemptCount, n);
  const exhausted = retryExhausted(o.retryPolicy, attempts, failureClass);
  if (holdWindowOpen(o, step.now, attempts, failureClass)) {
    await holdForOperatorRetry(
      step,
      occurrence,
      run,
      { type: 'hold_opened', actor: 'dispatcher', attempts, failureClass },
      `held for operator retry after ${failureClass}`,
    );
    return undefined;
  }
  await settleRunFailed(step, runId, attemptId, n, detail, failureClass);
  await endRunHold(step, occurrence, { type: 'hold_run_settled', actor: 'dispatcher' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    {
      type: 'run_settled',
      actor: 'dispatcher',
      failure: { failureClass, preOwnership: true },
      attemptNumber: n,
    },
    (a) => ({ ...a, stateReason: `${failureClass}: ${detail}`.slice(0, 500), updatedAt: step.now }),
  );
  return exhausted
    ? {
        automationId: run.data.attributes.automationId,
        reason: `retryable ${failureClass} failures exhausted the retry policy of run ${runId}`,
        cause: { kind: 'retries_exhausted', retryPolicy: o.retryPolicy, attempts, failureClass },
      }
    : undefined;
}

/** Opens the next attempt under a new fence generation and moves the occurrence to wait out its backoff. */
async function retryAutomatically(
  step: StepContext,
  run: RunRecord,
  occurrence: OccurrenceRecord,
  attempt: AttemptRecord,
  failureClass: PreOwnershipFailureClass,
  notBefore: string,
): Promise<void> {
  const o = occurrenceContext(occurrence);
  const n = attemptContext(attempt).attemptNumber;
  await openAttempt(step, run, occurrence, {
    attemptNumber: n + 1,
    fenceGeneration: o.fence.generation + 1,
    leaseExpiresAt: o.deadlineAt!,
    prior: { attemptNumber: n, outcome: 'failed' },
    classification: 'automatic_retry',
    notBefore,
    runtimeId: attempt.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    {
      type: 'automatic_retry',
      actor: 'dispatcher',
      failure: { failureClass, preOwnership: true },
      priorAttemptNumber: n,
      priorDisposition: 'failed',
      notBefore,
    },
    (a) => ({
      ...a,
      notBefore,
      stateReason: `automatic retry after ${failureClass}`,
      updatedAt: step.now,
    }),
  );
}

/** Opens the run's operator hold; run and occurrence stay as they are, marked held, until a retry or the deadline. */
async function holdForOperatorRetry(
  step: StepContext,
  occurrence: OccurrenceRecord,
  run: RunRecord,
  hold: RunHoldSend,
  occurrenceReason: string,
): Promise<void> {
  await moveRunHold(step, occurrence, hold);
  await updateEntityAttributes<OccurrenceAttributes>(
    step.tx,
    KINDS.occurrence,
    occurrence.id,
    occurrence.version,
    (a) => ({ ...a, stateReason: occurrenceReason, updatedAt: step.now }),
  );
  await updateEntityAttributes<RunAttributes>(step.tx, KINDS.run, run.id, run.version, (a) => ({
    ...a,
    stateReason: 'held_for_operator_retry',
  }));
}

/**
 * After an attempt settled with terminal runtime evidence: success settles run and occurrence (with the
 * receipt); failure settles them unless the ordinary run's operator hold window is open, in which case
 * both stay running, held.
 */
export async function afterTerminalEvidence(
  step: StepContext,
  occurrenceId: string,
  runId: string,
  attemptId: string,
  evidence: TerminalEvidence,
  receiptRef: string,
  undelivered?: string,
): Promise<void> {
  const occurrence = await loadOccurrence(step.tx, occurrenceId);
  const run = await loadRun(step.tx, runId);
  const n = attemptContext(await loadAttempt(step.tx, attemptId)).attemptNumber;
  const runIsCurrent = stateOf(run) === RunState.running && run.data.attributes.attemptIds.at(-1) === attemptId;
  const occurrenceRunning = stateOf(occurrence) === OccurrenceState.running;
  if (!runIsCurrent || !occurrenceRunning) return;
  const succeeded = evidence.outcome === 'succeeded' && (evidence.exitCode === null || evidence.exitCode === 0);
  if (succeeded) {
    await settleSucceeded(step, occurrence, runId, { attemptId, attemptNumber: n }, evidence, receiptRef);
    return;
  }
  const o = occurrenceContext(occurrence);
  const attempts = Math.max(o.attemptCount, n);
  if (holdWindowOpen(o, step.now, attempts)) {
    // An undelivered output failed the attempt like any failure; the reason says so while the run is held.
    const held = 'held for operator retry after a failed attempt';
    const reason = undelivered === undefined ? held : `${held} (${undelivered})`.slice(0, 500);
    await holdForOperatorRetry(step, occurrence, run, { type: 'hold_opened', actor: 'dispatcher', attempts }, reason);
    return;
  }
  await endRunHold(step, occurrence, { type: 'hold_run_settled', actor: 'dispatcher' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    { type: 'run_settled', actor: 'dispatcher', evidence, attemptNumber: n },
    (a) => ({ ...a, stateReason: undelivered ?? 'run_failed', updatedAt: step.now }),
  );
  await settleRunFailed(step, runId, attemptId, n, undelivered ?? 'runtime evidence proves failure', 'runtime_error');
}

/** Verified success settles the occurrence, then the run, both pointing at the attempt's receipt. */
async function settleSucceeded(
  step: StepContext,
  occurrence: OccurrenceRecord,
  runId: string,
  { attemptId, attemptNumber }: { attemptId: string; attemptNumber: number },
  evidence: TerminalEvidence,
  receiptRef: string,
): Promise<void> {
  await endRunHold(step, occurrence, { type: 'hold_run_settled', actor: 'dispatcher' });
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrence.id,
    { type: 'run_settled', actor: 'dispatcher', evidence, receiptRef },
    (a) => ({ ...a, stateReason: 'run_succeeded', updatedAt: step.now }),
  );
  await moveEntity<RunAttributes>(
    step,
    'run',
    runId,
    {
      type: 'attempt_settled',
      actor: 'dispatcher',
      attempt: { attemptId, attemptNumber, state: 'succeeded' },
      receiptRef,
      furtherAttemptOpens: false,
    },
    (a) => ({
      ...a,
      stateReason: 'attempt_settled_succeeded',
      finishedAt: step.now,
      receiptRef,
      terminalDisposition: { outcome: 'succeeded', detail: 'verified completion evidence' },
    }),
  );
}

/**
 * A held run whose original deadline passed settles failed, its prior attempt untouched. The scheduler, which
 * finds the deadline passed, has already ended the hold (hold_deadline_expired) in the same transaction.
 */
export async function settleExpiredHold(step: StepContext, occurrence: OccurrenceRecord): Promise<void> {
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId === undefined) return;
  const run = await loadRun(step.tx, runId);
  const attemptId = run.data.attributes.attemptIds.at(-1)!;
  const attempt = await loadAttempt(step.tx, attemptId);
  const n = attemptContext(attempt).attemptNumber;
  if (stateOf(run) === RunState.running)
    await settleRunFailed(
      step,
      runId,
      attemptId,
      n,
      'held run deadline expired',
      attempt.data.attributes.failureClass ?? 'runtime_error',
    );
  const state = stateOf(occurrence);
  if (state === OccurrenceState.claimed) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrence.id,
      {
        type: 'run_settled',
        actor: 'dispatcher',
        failure: {
          failureClass: (attempt.data.attributes.failureClass ?? 'launch_refused') as PreOwnershipFailureClass,
          preOwnership: true,
        },
        attemptNumber: n,
      },
      (a) => ({
        ...a,
        stateReason: 'held run deadline expired',
        updatedAt: step.now,
      }),
    );
  } else if (state === OccurrenceState.running && attempt.data.attributes.evidence !== undefined) {
    await moveEntity<OccurrenceAttributes>(
      step,
      'occurrence',
      occurrence.id,
      { type: 'run_settled', actor: 'dispatcher', evidence: attempt.data.attributes.evidence, attemptNumber: n },
      (a) => ({
        ...a,
        stateReason: 'held run deadline expired',
        updatedAt: step.now,
      }),
    );
  }
}
