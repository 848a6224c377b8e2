import { AttemptState } from '../../machines/index.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { launchOrphaned } from '../domain/owner-lease.js';
import { KINDS, attemptContext, sessionKeyOf, type AttemptRecord } from '../domain/records.js';
import { moveOutbox, readAttemptLaunch, readOutbox } from '../domain/outbox.js';
import { OutboxState } from '../../machines/extension-states.js';
import type { StepContext } from '../domain/lifecycle.js';
import { WorkPartition } from '../domain/work-partition.js';
import type { EngineServices } from '../domain/services.js';
import { canReadEvidence } from '../domain/evidence-access.js';
import { describeLocation } from '../runtime/evidence-location.js';
import type { EvidenceLocation, LaunchEvidence, LaunchResult } from '../runtime/runtime.js';
import { applyLaunchResult } from './launch-answer.js';
import { releaseLaunch } from './launch-release.js';
import { quarantineAutomation } from './quarantine.js';
import { type LaunchOutcome } from '../domain/launch-outcome.js';

/** A launch whose sender can no longer answer for it: sent (`sending`), never answered. */
interface OrphanedLaunch {
  outboxId: string;
  sessionKey: string;
  runtimeId: string;
  /** Where the sender's runtime keeps the launch's evidence, as recorded when it was marked `sending`. */
  location: EvidenceLocation | undefined;
  senderId: string | undefined;
}

async function findOrphan(svc: EngineServices, attemptId: string): Promise<OrphanedLaunch | undefined> {
  return svc.store.read(async (r) => {
    const attempt = (await r.get<AttemptRecord['data']>(KINDS.attempt, attemptId)) as AttemptRecord | undefined;
    if (attempt === undefined || attempt.data.snapshot.value !== AttemptState.dispatching) return undefined;
    const outbox = await readAttemptLaunch(r, attemptId, attemptContext(attempt).dispatchGeneration);
    if (outbox === undefined || outbox.state !== OutboxState.sending) return undefined;
    const outboxId = outbox.id;
    const senderId = attempt.data.attributes.workerCorrelation?.workerId;
    if (!(await launchOrphaned(svc, r, outboxId, senderId, outbox.entry.sentAt))) return undefined;
    return {
      outboxId,
      sessionKey: sessionKeyOf(outboxId, outbox.entry),
      runtimeId: attempt.data.attributes.runtimeId,
      location: outbox.entry.evidenceLocation,
      senderId,
    };
  });
}

/**
 * Puts a launch the runtime proved never started back to `pending`, under a fresh session key (the runtime fenced
 * the old one for good), so it is sent again under the same attempt and fence: nothing ran, so nothing failed.
 * `never_started` evidence is the runtime's proof that the key it was asked about is fenced; the outbox machine
 * accepts it only for the key of its current send.
 */
async function requeue(step: StepContext, orphan: OrphanedLaunch): Promise<boolean> {
  const outbox = await readOutbox(step.tx, orphan.outboxId);
  if (outbox === undefined || outbox.state !== OutboxState.sending) return false;
  await moveOutbox(step, orphan.outboxId, {
    type: 'outbox_send_unstarted',
    actor: 'dispatcher',
    sessionKey: orphan.sessionKey,
    neverStarted: true,
    fenced: true,
  });
  return true;
}

/** Asks the orphan's runtime, when it can read the launch's evidence; any other answer is `unknown`. */
async function askRuntime(svc: EngineServices, orphan: OrphanedLaunch): Promise<LaunchEvidence> {
  const runtime = svc.runtime(orphan.runtimeId);
  if (runtime?.launchEvidence === undefined)
    return { evidence: 'unknown', detail: `runtime ${orphan.runtimeId} keeps no launch evidence` };
  // A runtime looking elsewhere would find no claim and fence a key nobody reads there: never a proof.
  if (!canReadEvidence(svc, runtime, orphan.location, orphan.senderId))
    return {
      evidence: 'unknown',
      detail:
        `the launch's evidence is at ${describeLocation(orphan.location)}, which runtime ${orphan.runtimeId} ` +
        `here (${describeLocation(runtime.evidenceLocation)}) cannot read`,
    };
  try {
    return await runtime.launchEvidence(orphan.sessionKey, svc.clock.now());
  } catch (error) {
    return {
      evidence: 'unknown',
      detail: `runtime ${orphan.runtimeId} could not be asked: ${(error as Error).message}`,
    };
  }
}

/**
 * Decides one orphaned launch from its runtime's evidence, asked only of a runtime that can read it: a session
 * that started is bound to its attempt and observed from then on; a launch the runtime proves never started
 * (and can no longer start) is sent again at once under the same attempt and fence. Without evidence nothing is
 * decided here: the lease and recovery decide, and an ambiguous outcome goes to the operator (`'undecided'`).
 */
export async function resolveOrphanedLaunch(
  svc: EngineServices,
  orphan: OrphanedLaunch,
): Promise<LaunchOutcome | 'undecided' | undefined> {
  const evidence = await askRuntime(svc, orphan);
  if (evidence.evidence === 'started') {
    const answer: LaunchResult = { outcome: 'started', sessionId: evidence.sessionId, cursors: evidence.cursors };
    const quarantine = await svc.step(async (step) => {
      const request = await applyLaunchResult(svc, step, orphan.outboxId, answer, orphan.sessionKey);
      if (request !== undefined) await quarantineAutomation(step, request);
      return request;
    });
    return { outboxId: orphan.outboxId, result: answer, ...(quarantine === undefined ? {} : { quarantine }) };
  }
  if (evidence.evidence === 'never_started')
    return (await svc.step((step) => requeue(step, orphan))) ? releaseLaunch(svc, orphan.outboxId) : undefined;
  return 'undecided';
}

/** What deciding the orphaned launches of one pass came to. */
export interface OrphanResolution {
  outcomes: LaunchOutcome[];
  /**
   * Launches (outbox ids) whose runtime was asked in this pass and could not say whether they started: only
   * these may have their lapsed claims judged by the lease in the same pass. An orphan nobody asked about yet
   * (its sender died a moment ago, after this pass's question) waits for the next pass's question instead.
   */
  undecided: Set<string>;
}

/**
 * Finds every orphaned launch among the live attempts and decides each from evidence, up to `passConcurrency`
 * at once so their commits share durable writes (after a crash in a burst there may be hundreds).
 */
export async function resolveOrphanedLaunches(
  svc: EngineServices,
  errors: Error[],
  partition?: WorkPartition,
): Promise<OrphanResolution> {
  const outcomes: LaunchOutcome[] = [];
  const undecided = new Set<string>();
  // Only a dispatching attempt can hold a launch in flight: the index says which, without reading the others.
  // Each engine looks at its own launches and its share of those whose sender is gone (see WorkPartition).
  const live = await svc.store.read(async (r) => {
    const share = partition ?? (await WorkPartition.read(svc, r));
    return (await r.liveWork('attempt', { exceptHeldBy: share.others })).filter(
      (w) => w.state === AttemptState.dispatching && share.mine(w.id, w.launchedBy),
    );
  });
  await forEachConcurrently(live, svc.passConcurrency, async ({ id }) => {
    try {
      const orphan = await findOrphan(svc, id);
      const outcome = orphan === undefined ? undefined : await resolveOrphanedLaunch(svc, orphan);
      if (outcome === 'undecided') undecided.add(orphan!.outboxId);
      else if (outcome !== undefined) outcomes.push(outcome);
    } catch (error) {
      errors.push(
        new Error(`dispatcher: orphaned launch of attempt ${id}: ${(error as Error).message}`, { cause: error }),
      );
    }
  });
  return { outcomes, undecided };
}
