import { AttemptState, DeliveryState } from '../../machines/index.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import {
  deliveryOf,
  moveDelivery,
  pendingDeliveries,
  pinnedOutputTarget,
  startDelivery,
  type DeliveryView,
} from '../domain/delivery.js';
import type { StepContext } from '../domain/lifecycle.js';
import { ownerAlive } from '../domain/owner-lease.js';
import { attemptContext, KINDS, stateOf, type RunRecord } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import type { EngineServices } from '../domain/services.js';
import type { Observation } from '../runtime/runtime.js';
import { settleOnExit, succeededExit, type DeliveryOutcome, type ExitObservation } from './exit-settlement.js';

type Ended = Exclude<Observation, { status: 'running' }>;

/** What the first step decided: the ordinary settle, nothing more (settled or not), or a write to make. */
type Plan =
  { kind: 'ordinary' } | { kind: 'done'; settled: boolean } | { kind: 'write'; target: string; runtimeId: string };

/** The prefix every non-committed delivery's reason carries, so no reader takes the run for a success. */
export const DELIVERY_FAILED = 'delivery commit failed';

/**
 * The session of a run that delivers ended: deliver, then settle. The delivery is committed `pending` first, the
 * target is written outside any transaction, and the delivery's outcome commits with the attempt's settlement,
 * so a crash in between leaves a pending record that the next look turns ambiguous, never a silent rewrite.
 * For a run whose pin names an output target (see {@link runDelivers}); undefined when the attempt's run turns out to
 * deliver nothing after all (the caller settles it the ordinary way).
 */
export async function settleDelivering(
  svc: EngineServices,
  attemptId: string,
  sessionId: string,
  observation: Ended,
): Promise<boolean | undefined> {
  // One delivery per attempt in this process: a cue and a pass may observe the same exit at once.
  // Marked before the first await, so a second observation cannot slip past and find the first's pending record.
  if (svc.deliveriesInFlight.has(attemptId)) return false;
  svc.deliveriesInFlight.add(attemptId);
  try {
    const plan = await svc.step((step) => planDelivery(svc, step, attemptId, sessionId, observation));
    if (plan.kind === 'ordinary') return undefined;
    if (plan.kind === 'done') return plan.settled;
    const outcome = await write(svc, plan, sessionId);
    const exit = exitOf(observation);
    return await svc.step((step) => finishDelivery(svc, step, attemptId, sessionId, exit, outcome));
  } finally {
    svc.deliveriesInFlight.delete(attemptId);
  }
}

/** Whether the revision the run pinned names an output target: then it settles through {@link settleDelivering}. */
export async function runDelivers(reader: StoreReader, runId: string): Promise<boolean> {
  const run = await reader.get<RunRecord['data']>(KINDS.run, runId);
  if (run === undefined) return false;
  const { automationId, automationRevision } = run.data.attributes;
  return (await pinnedOutputTarget(reader, automationId, automationRevision)) !== undefined;
}

async function planDelivery(
  svc: EngineServices,
  step: StepContext,
  attemptId: string,
  sessionId: string,
  observation: Ended,
): Promise<Plan> {
  const attempt = await loadAttempt(step.tx, attemptId);
  const state = stateOf(attempt);
  if (state !== AttemptState.started && state !== AttemptState.observing) return { kind: 'done', settled: false };
  const { runId, occurrenceId } = attemptContext(attempt);
  const run = await loadRun(step.tx, runId);
  const { automationId, automationRevision } = run.data.attributes;
  const target = await pinnedOutputTarget(step.tx, automationId, automationRevision);
  if (target === undefined) return { kind: 'ordinary' };
  const existing = await deliveryOf(step.tx, attemptId);
  if (existing !== undefined) return settleFound(svc, step, existing, attemptId, sessionId, observation);
  // Only a success delivers; a failure, or a cancellation the runtime acknowledged, settles the ordinary way.
  const acknowledgedCancel =
    observation.status === 'exited' && observation.cancelled && state === AttemptState.observing;
  if (observation.status !== 'exited' || !succeededExit(observation) || acknowledgedCancel) return { kind: 'ordinary' };
  const evidence = { outcome: observation.outcome, exitCode: observation.exitCode, verified: true };
  await startDelivery(
    step,
    { attemptId, runId, occurrenceId, automationId, target },
    { type: 'delivery_started', actor: 'worker', writer: svc.instanceId, evidence },
  );
  return { kind: 'write', target, runtimeId: attempt.data.attributes.runtimeId };
}

/** A delivery already recorded for this run: one pending without a live writer is interrupted; ended ones settle. */
async function settleFound(
  svc: EngineServices,
  step: StepContext,
  found: DeliveryView,
  attemptId: string,
  sessionId: string,
  observation: Ended,
): Promise<Plan> {
  let view = found;
  if (view.state === DeliveryState.pending) {
    if (view.writer !== svc.instanceId && view.writer !== null && (await ownerAlive(svc, step.tx, view.writer)))
      return { kind: 'done', settled: false };
    view = await interrupt(step, view, 'found pending with no engine writing it');
  }
  const outcome: DeliveryOutcome =
    view.state === DeliveryState.committed
      ? { state: DeliveryState.committed, digest: view.digest! }
      : {
          state: view.state === DeliveryState.failed ? DeliveryState.failed : DeliveryState.ambiguous,
          reason: view.reason!,
        };
  const settled = await settleOnExit(svc, step, attemptId, sessionId, exitOf(observation), outcome);
  return { kind: 'done', settled };
}

/** Pending with nobody writing it: whether the target was replaced is unknown, so it is never written again. */
function interrupt(step: StepContext, view: DeliveryView, why: string): Promise<DeliveryView> {
  const reason =
    `${DELIVERY_FAILED}: interrupted while pending (${why}); whether ${view.target} was replaced is unknown, ` +
    'and it is not rewritten';
  const event = { type: 'delivery_interrupted' as const, actor: 'worker' as const, writerStillWriting: false, reason };
  return moveDelivery(step, view.attemptId, event);
}

/** Writes the session's output through the delivery port; every way it can fail is a reason, never a throw. */
async function write(
  svc: EngineServices,
  { target, runtimeId }: { target: string; runtimeId: string },
  sessionId: string,
): Promise<{ digest: string } | { reason: string }> {
  if (svc.delivery === undefined)
    return { reason: `${DELIVERY_FAILED}: this engine has no output delivery configured (engine option delivery)` };
  const runtime = svc.runtime(runtimeId);
  try {
    const output = await runtime?.sessionOutput?.(sessionId);
    if (output === undefined)
      return { reason: `${DELIVERY_FAILED}: the runtime keeps no output of session ${sessionId} to deliver` };
    return await svc.delivery.commit(target, output);
  } catch (error) {
    return { reason: `${DELIVERY_FAILED}: ${(error as Error)?.message ?? String(error)}` };
  }
}

/**
 * Commits the delivery's outcome and, while its attempt is still live, the attempt's settlement with it. A
 * delivery someone else moved meanwhile (it was found interrupted) is left as they decided.
 */
async function finishDelivery(
  svc: EngineServices,
  step: StepContext,
  attemptId: string,
  sessionId: string,
  exit: ExitObservation,
  result: { digest: string } | { reason: string },
): Promise<boolean> {
  const view = await deliveryOf(step.tx, attemptId);
  if (view?.state !== DeliveryState.pending || view.writer !== svc.instanceId) return false;
  const moved =
    'digest' in result
      ? await moveDelivery(step, attemptId, { type: 'delivery_committed', actor: 'worker', digest: result.digest })
      : await moveDelivery(step, attemptId, { type: 'delivery_failed', actor: 'worker', reason: result.reason });
  const outcome: DeliveryOutcome =
    moved.state === DeliveryState.committed
      ? { state: DeliveryState.committed, digest: moved.digest! }
      : { state: DeliveryState.failed, reason: moved.reason! };
  return settleOnExit(svc, step, attemptId, sessionId, exit, outcome);
}

/**
 * The session's exit as the delivery recorded it. A delivery starts only on verified success evidence (its
 * machine's guard), so a session the runtime has since lost still ended in success.
 */
function exitOf(observation: Ended): ExitObservation {
  return observation.status === 'exited'
    ? observation
    : { status: 'exited', outcome: 'succeeded', exitCode: 0, cancelled: false };
}

/**
 * Deliveries left pending by an engine that is gone, whose attempt has settled some other way since (a timeout,
 * a cancel): no observation will reach them, so each pass turns them ambiguous here. Returns how many.
 */
export async function interruptOrphanedDeliveries(svc: EngineServices): Promise<number> {
  const pending = await svc.store.read((r) => pendingDeliveries(r));
  let interrupted = 0;
  for (const view of pending) {
    if (svc.deliveriesInFlight.has(view.attemptId)) continue;
    const done = await svc.step(async (step) => {
      const current = await deliveryOf(step.tx, view.attemptId);
      if (current?.state !== DeliveryState.pending) return false;
      const attempt = await loadAttempt(step.tx, current.attemptId);
      const live = stateOf(attempt) === AttemptState.started || stateOf(attempt) === AttemptState.observing;
      if (live) return false;
      if (
        current.writer !== null &&
        current.writer !== svc.instanceId &&
        (await ownerAlive(svc, step.tx, current.writer))
      )
        return false;
      await interrupt(step, current, 'its attempt settled before the delivery did');
      return true;
    });
    if (done) interrupted += 1;
  }
  return interrupted;
}
