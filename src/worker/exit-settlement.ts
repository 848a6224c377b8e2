import { AttemptState, DeliveryState } from '../../machines/index.js';
import type { ActorServices, ActorSteps } from '../domain/actor-steps.js';
import { loadAttempt, loadOccurrence, loadRun } from '../domain/entities.js';
import { moveEntity, type StepContext } from '../domain/lifecycle.js';
import { attemptContext, KINDS, stateOf, type AttemptAttributes, type Receipt } from '../domain/records.js';
import { storeStream } from '../changefeed/event-envelope.js';
import { receiptIdFor, recordReceipt } from '../domain/receipts.js';
import { pinnedOutputTarget } from '../domain/delivery.js';
import type { TerminalEvidence } from '../guards/common.js';
import type { Observation } from '../runtime/runtime.js';
import { failureOfExit } from './failure-summary.js';

/** What a runtime answers `observe` for a session that ended. */
export type ExitObservation = Extract<Observation, { status: 'exited' }>;

/** What settling on an exit needs of the engine: the attempt's runtime (for the receipt) and the other actors. */
export type SettlingServices = ActorServices & { readonly actors: ActorSteps };

/** How a delivering run's output delivery ended, when it has ended: only `committed` lets the run succeed. */
export type DeliveryOutcome =
  { state: 'committed'; digest: string } | { state: 'failed' | 'ambiguous'; reason: string };

/** Verified success, as the dispatcher settles it: a succeeded exit with code 0 (or none). */
export const succeededExit = (o: ExitObservation): boolean =>
  o.outcome === 'succeeded' && (o.exitCode === null || o.exitCode === 0);

/** Occurrence and run state reasons are at most 500 characters. */
const reasonText = (reason: string) => (reason.length <= 500 ? reason : `${reason.slice(0, 497)}...`);

/** The entities an attempt's settlement reads, by id. */
export interface SettlementReads {
  readonly attemptId: string;
  readonly runId: string;
  readonly occurrenceId: string;
}

/**
 * Asks the store at once for what settling an attempt reads (see `StoreTransaction.prefetch`): the attempt, its run
 * and occurrence, the run's hold, and the heads of the two streams the settlement appends to. (The revision the run
 * pinned is named in the run, so it is read after.) A hint only: every read still answers what the store holds.
 */
export async function prefetchSettlement(step: StepContext, reads: SettlementReads): Promise<void> {
  const { attemptId, runId, occurrenceId } = reads;
  await step.tx.prefetch?.(
    [
      [KINDS.attempt, attemptId],
      [KINDS.run, runId],
      [KINDS.occurrence, occurrenceId],
      [KINDS.runHold, runId],
    ],
    [storeStream({ kind: 'run', id: runId }), storeStream({ kind: 'occurrence', id: occurrenceId })],
    { appending: true },
  );
}

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
  delivery?: DeliveryOutcome,
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
  // A success of a run that delivers settles only with its delivery's outcome (worker/delivery.ts): here, as in
  // a launch answer's commit, it waits for that path.
  if (delivery === undefined && succeededExit(observation) && (await owesDelivery(step, attempt))) return false;
  await settleByEvidence(svc, step, attempt, sessionId, observation, delivery);
  return true;
}

async function owesDelivery(step: StepContext, attempt: Awaited<ReturnType<typeof loadAttempt>>): Promise<boolean> {
  const run = await loadRun(step.tx, attemptContext(attempt).runId);
  const { automationId, automationRevision } = run.data.attributes;
  return (await pinnedOutputTarget(step.tx, automationId, automationRevision)) !== undefined;
}

async function settleByEvidence(
  svc: SettlingServices,
  step: StepContext,
  attempt: Awaited<ReturnType<typeof loadAttempt>>,
  sessionId: string,
  observation: ExitObservation,
  delivery: DeliveryOutcome | undefined,
): Promise<void> {
  const a = attemptContext(attempt);
  const reason =
    delivery === undefined || delivery.state === DeliveryState.committed ? undefined : reasonText(delivery.reason);
  const run = await loadRun(step.tx, a.runId);
  const occurrence = await loadOccurrence(step.tx, a.occurrenceId);
  const runtime = svc.runtime(attempt.data.attributes.runtimeId);
  const evidence = evidenceOf(sessionId, observation, reason);
  const failure =
    evidence.outcome === 'failed' ? await failureOfExit(runtime, sessionId, observation, reason) : undefined;
  const settledAttempt = await moveEntity<AttemptAttributes>(
    step,
    'attempt',
    attempt.id,
    { type: 'run_settled', actor: 'worker', evidence },
    (x) => ({
      ...x,
      evidence,
      ...(failure === undefined ? {} : { failure }),
      stateReason:
        reason ??
        (observation.outcome === 'succeeded'
          ? 'verified completion evidence'
          : `verified failure evidence (exit ${String(observation.exitCode)})`),
      settledAt: step.now,
    }),
  );
  // The occurrence and run settle first; the receipt is written in the same commit, so nothing can observe
  // either settled without it, and the changefeed reads settled -> finished -> sealed.
  const receiptId = receiptIdFor(attempt.id);
  await svc.actors.dispatcher.afterTerminalEvidence(
    step,
    occurrence.id,
    run.id,
    attempt.id,
    evidence,
    receiptId,
    reason,
  );
  await recordReceipt(
    step,
    runtime,
    occurrence,
    run,
    settledAttempt.record as Awaited<ReturnType<typeof loadAttempt>>,
    receiptOutcome(settledAttempt.to, observation.exitCode, reason),
    observation.outputDigest,
    delivery?.state === DeliveryState.committed ? delivery.digest : undefined,
  );
}

/** A run whose output did not reach its target did not do its work: its attempt fails, whatever the session did. */
function evidenceOf(
  sessionId: string,
  observation: ExitObservation,
  undelivered: string | undefined,
): TerminalEvidence & { outputDigest?: string } {
  return {
    sessionId,
    outcome: undelivered === undefined ? observation.outcome : 'failed',
    exitCode: observation.exitCode,
    verified: true,
    ...(observation.outputDigest === undefined ? {} : { outputDigest: observation.outputDigest }),
  };
}

/** The receipt's outcome of an exit-settled attempt; an undelivered output is named as the delivery step's failure. */
function receiptOutcome(to: string, exitCode: number | null, undelivered: string | undefined): Receipt['outcome'] {
  return {
    disposition: to,
    ...(to === AttemptState.failed ? { failureClass: 'runtime_error' } : {}),
    detail:
      undelivered ?? (to === AttemptState.succeeded ? 'verified completion evidence' : `exit ${String(exitCode)}`),
    ...(undelivered === undefined
      ? {}
      : { partialFailures: [{ step: 'delivery', reason: undelivered, recovered: false }] }),
    recoveryDisposition: 'not_required',
  };
}
