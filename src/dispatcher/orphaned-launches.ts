import { AttemptState } from '../../machines/index.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { LIVE_INDEX } from '../domain/lifecycle.js';
import { launchOrphaned } from '../domain/owner-lease.js';
import { KINDS, attemptContext, sessionKeyOf, type AttemptRecord, type OutboxEntry } from '../domain/records.js';
import type { StepContext } from '../domain/lifecycle.js';
import type { EngineServices } from '../domain/services.js';
import type { LaunchEvidence, LaunchResult } from '../runtime/runtime.js';
import { applyLaunchResult, releaseLaunch } from './dispatcher.js';
import { type LaunchOutcome } from '../domain/launch-outcome.js';

/** A launch whose sender can no longer answer for it: sent (`sending`), never answered. */
interface OrphanedLaunch {
  outboxId: string;
  sessionKey: string;
  runtimeId: string;
}

async function findOrphan(svc: EngineServices, attemptId: string): Promise<OrphanedLaunch | undefined> {
  return svc.store.read(async (r) => {
    const attempt = (await r.get<AttemptRecord['data']>(KINDS.attempt, attemptId)) as AttemptRecord | undefined;
    if (attempt === undefined || attempt.data.snapshot.value !== AttemptState.dispatching) return undefined;
    const outboxId = `${attemptId}#${attemptContext(attempt).dispatchGeneration}`;
    const outbox = await r.get<OutboxEntry>(KINDS.outbox, outboxId);
    if (outbox === undefined || outbox.data.status !== 'sending') return undefined;
    const orphaned = await launchOrphaned(svc, r, outboxId, attempt.data.attributes.workerCorrelation?.workerId);
    return orphaned
      ? { outboxId, sessionKey: sessionKeyOf(outboxId, outbox.data), runtimeId: attempt.data.attributes.runtimeId }
      : undefined;
  });
}

/**
 * Puts a launch the runtime proved never started back to `pending`, under a fresh session key (the runtime fenced
 * the old one for good), so it is sent again under the same attempt and fence: nothing ran, so nothing failed.
 */
async function requeue(step: StepContext, outboxId: string): Promise<boolean> {
  const outbox = await step.tx.get<OutboxEntry>(KINDS.outbox, outboxId);
  if (outbox === undefined || outbox.data.status !== 'sending') return false;
  await step.tx.put(
    KINDS.outbox,
    outboxId,
    { ...outbox.data, status: 'pending', resends: (outbox.data.resends ?? 0) + 1 },
    { expectedVersion: outbox.version },
  );
  await step.tx.put('pending-launch', outboxId, { committedAt: step.now }, { expectedVersion: null });
  return true;
}

/**
 * Decides one orphaned launch from its runtime's evidence: a session that started is bound to its attempt and
 * observed from then on; a launch the runtime proves never started (and can no longer start) is sent again at
 * once under the same attempt and fence. Without evidence nothing is decided here: the lease and recovery
 * decide, and an ambiguous outcome goes to the operator.
 */
export async function resolveOrphanedLaunch(
  svc: EngineServices,
  orphan: OrphanedLaunch,
): Promise<LaunchOutcome | undefined> {
  const runtime = svc.runtime(orphan.runtimeId);
  let evidence: LaunchEvidence;
  try {
    evidence =
      runtime?.launchEvidence === undefined
        ? { evidence: 'unknown', detail: `runtime ${orphan.runtimeId} keeps no launch evidence` }
        : await runtime.launchEvidence(orphan.sessionKey, svc.clock.now());
  } catch (error) {
    evidence = {
      evidence: 'unknown',
      detail: `runtime ${orphan.runtimeId} could not be asked: ${(error as Error).message}`,
    };
  }
  if (evidence.evidence === 'started') {
    const answer: LaunchResult = { outcome: 'started', sessionId: evidence.sessionId, cursors: evidence.cursors };
    const quarantine = await svc.step((step) => applyLaunchResult(svc, step, orphan.outboxId, answer));
    return { outboxId: orphan.outboxId, result: answer, ...(quarantine === undefined ? {} : { quarantine }) };
  }
  if (evidence.evidence === 'never_started' && (await svc.step((step) => requeue(step, orphan.outboxId))))
    return releaseLaunch(svc, orphan.outboxId);
  return undefined;
}

/**
 * Finds every orphaned launch among the live attempts and decides each from evidence, up to `passConcurrency`
 * at once so their commits share durable writes (after a crash in a burst there may be hundreds).
 */
export async function resolveOrphanedLaunches(svc: EngineServices, errors: Error[]): Promise<LaunchOutcome[]> {
  const outcomes: LaunchOutcome[] = [];
  const live = await svc.store.read((r) => r.list(LIVE_INDEX.attempt));
  await forEachConcurrently(live, svc.passConcurrency, async ({ id }) => {
    try {
      const orphan = await findOrphan(svc, id);
      const outcome = orphan === undefined ? undefined : await resolveOrphanedLaunch(svc, orphan);
      if (outcome !== undefined) outcomes.push(outcome);
    } catch (error) {
      errors.push(
        new Error(`dispatcher: orphaned launch of attempt ${id}: ${(error as Error).message}`, { cause: error }),
      );
    }
  });
  return outcomes;
}
