import { LIVE_INDEX } from '../engine/lifecycle.js';
import { launchOrphaned } from '../engine/owner-lease.js';
import { KINDS, attemptContext, type AttemptRecord, type OutboxEntry } from '../engine/records.js';
import type { EngineServices } from '../engine/services.js';
import type { LaunchEvidence, LaunchResult } from '../runtime/runtime.js';
import { applyLaunchResult, type LaunchOutcome } from './dispatcher.js';

/** A launch whose sender can no longer answer for it: sent (`sending`), never answered. */
interface OrphanedLaunch {
  outboxId: string;
  runtimeId: string;
}

async function findOrphan(svc: EngineServices, attemptId: string): Promise<OrphanedLaunch | undefined> {
  return svc.store.read(async (r) => {
    const attempt = (await r.get<AttemptRecord['data']>(KINDS.attempt, attemptId)) as AttemptRecord | undefined;
    if (attempt === undefined || attempt.data.snapshot.value !== 'dispatching') return undefined;
    const outboxId = `${attemptId}#${attemptContext(attempt).dispatchGeneration}`;
    const outbox = await r.get<OutboxEntry>(KINDS.outbox, outboxId);
    if (outbox === undefined || outbox.data.status !== 'sending') return undefined;
    const orphaned = await launchOrphaned(svc, r, outboxId, attempt.data.attributes.workerCorrelation?.workerId);
    return orphaned ? { outboxId, runtimeId: attempt.data.attributes.runtimeId } : undefined;
  });
}

/** What the runtime's evidence makes of an orphaned launch, as the launch's answer; undefined when it proves nothing. */
function answerFrom(evidence: LaunchEvidence): LaunchResult | undefined {
  if (evidence.evidence === 'started') return { outcome: 'started', sessionId: evidence.sessionId, cursors: evidence.cursors };
  if (evidence.evidence === 'never_started') {
    return {
      outcome: 'failed',
      failureClass: 'transient_dispatch',
      detail: `the launch's sender stopped before the runtime started it; the runtime proves no session started and none will (${evidence.detail})`.slice(0, 500),
    };
  }
  return undefined;
}

/**
 * Decides one orphaned launch from its runtime's evidence: a session that started is bound to its attempt
 * and observed from then on; a launch the runtime proves never started fails as a pre-ownership failure (an
 * automatic retry when the pinned policy allows). Without evidence nothing is decided here: the lease and
 * recovery decide, and an ambiguous outcome goes to the operator.
 */
export async function resolveOrphanedLaunch(svc: EngineServices, orphan: OrphanedLaunch): Promise<LaunchOutcome | undefined> {
  const runtime = svc.runtime(orphan.runtimeId);
  let evidence: LaunchEvidence;
  try {
    evidence = runtime?.launchEvidence === undefined ? { evidence: 'unknown', detail: `runtime ${orphan.runtimeId} keeps no launch evidence` } : await runtime.launchEvidence(orphan.outboxId, svc.clock.now());
  } catch (error) {
    evidence = { evidence: 'unknown', detail: `runtime ${orphan.runtimeId} could not be asked: ${(error as Error).message}` };
  }
  const answer = answerFrom(evidence);
  if (answer === undefined) return undefined;
  const quarantine = await svc.step((step) => applyLaunchResult(step, orphan.outboxId, answer));
  return { outboxId: orphan.outboxId, result: answer, ...(quarantine === undefined ? {} : { quarantine }) };
}

/** Finds every orphaned launch among the live attempts and decides each from evidence. */
export async function resolveOrphanedLaunches(svc: EngineServices, errors: Error[]): Promise<LaunchOutcome[]> {
  const outcomes: LaunchOutcome[] = [];
  for (const { id } of await svc.store.read((r) => r.list(LIVE_INDEX.attempt))) {
    try {
      const orphan = await findOrphan(svc, id);
      const outcome = orphan === undefined ? undefined : await resolveOrphanedLaunch(svc, orphan);
      if (outcome !== undefined) outcomes.push(outcome);
    } catch (error) {
      errors.push(new Error(`dispatcher: orphaned launch of attempt ${id}: ${(error as Error).message}`, { cause: error }));
    }
  }
  return outcomes;
}
