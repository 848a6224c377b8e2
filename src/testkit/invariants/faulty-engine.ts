import { OccurrenceState } from '../../../machines/index.js';
import type { ActorServices, EvidenceLoss } from '../../domain/actor-steps.js';
import type { AutomationDefinition } from '../../domain/definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../../domain/definition-records.js';
import { loadAttempt, loadOccurrence, loadRun } from '../../domain/entities.js';
import { attemptIdFor, runIdFor } from '../../domain/ids.js';
import { moveEntity, type StepContext } from '../../domain/lifecycle.js';
import {
  attemptContext,
  KINDS,
  occurrenceContext,
  stateOf,
  type OccurrenceAttributes,
  type OccurrenceRecord,
} from '../../domain/records.js';
import type { EngineServices } from '../../domain/services.js';
import { ENGINE_PARTS, type EngineParts } from '../../engine/parts.js';
import type { Store, StoreReader, StoreTransaction } from '../../store/store.js';
import type { EngineFaults } from './faults.js';
import { FaultyStore, LIVE_HISTORY_READS_SETTLED } from './faulty-store.js';

/**
 * The engine parts of a broken variant: the production parts, with the ones a fault breaks wrapped around
 * the real functions (never copies of them), so everything else the engine does stays exactly as shipped.
 */
export function faultyParts(faults: Partial<EngineFaults>): EngineParts {
  const real = ENGINE_PARTS;
  const scheduler = real.actors.scheduler;
  return {
    actors: {
      ...real.actors,
      scheduler: faults.autoRetryAmbiguous
        ? {
            ...scheduler,
            async recordEvidenceLost(svc, step, loss) {
              await retryAfterLoss(svc, step, loss, () => scheduler.recordEvidenceLost(svc, step, loss));
            },
          }
        : scheduler,
    },
    dispatchOccurrence: real.dispatchOccurrence,
    // A pass and a manual run both queue a launch inside a transaction (the pass's dispatch step, the command's):
    // the early launch reads what that one holds, before it commits.
    queueLaunch: faults.launchBeforeAdoptionCommit
      ? async (svc, step, occurrenceId) => {
          await launchAhead(svc, await undispatchedDefinition(step.tx, occurrenceId), occurrenceId);
          return real.queueLaunch(svc, step, occurrenceId);
        }
      : real.queueLaunch,
    // Only retention reads through the lying store: the rest of the engine still sees live history as live.
    sweepRetention: faults.compactLiveHistory
      ? (svc, policy, errors) =>
          real.sweepRetention(withStore(svc, new FaultyStore(svc.store, LIVE_HISTORY_READS_SETTLED)), policy, errors)
      : real.sweepRetention,
    passPhases: real.passPhases,
  };
}

/** The same services, reading and committing through `store`. */
function withStore(svc: EngineServices, store: Store): EngineServices {
  return Object.create(svc, { store: { value: store } }) as EngineServices;
}

/**
 * `autoRetryAmbiguous`: after the scheduler parks a lost session's occurrence in recovery_required, new work
 * is opened at once, as if an operator had determined a retry — but no occurrence.recover.v1 was ever issued.
 */
async function retryAfterLoss(
  svc: ActorServices,
  step: StepContext,
  loss: EvidenceLoss,
  recordLoss: () => Promise<void>,
): Promise<void> {
  const lost = attemptContext(await loadAttempt(step.tx, loss.attemptId));
  const before = await loadOccurrence(step.tx, lost.occurrenceId);
  await recordLoss();
  const occurrence = await loadOccurrence(step.tx, lost.occurrenceId);
  if (stateOf(occurrence) !== OccurrenceState.recovery_required || stateOf(before) !== OccurrenceState.running) return;
  await retryWithoutOperator(svc, step, occurrence, lost.runId);
}

async function retryWithoutOperator(
  svc: ActorServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  runId: string,
): Promise<void> {
  const run = await loadRun(step.tx, runId);
  const latest = await loadAttempt(step.tx, run.data.attributes.attemptIds.at(-1)!);
  const n = attemptContext(latest).attemptNumber;
  const leaseExpiresAt = svc.leaseExpiresAt(step.now);
  const next = await ENGINE_PARTS.actors.dispatcher.openAttempt(step, run, occurrence, {
    attemptNumber: n + 1,
    fenceGeneration: occurrenceContext(occurrence).fence.generation + 1,
    leaseExpiresAt,
    prior: { attemptNumber: n, outcome: 'ambiguous' },
    classification: 'automatic_retry',
    runtimeId: latest.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(step, 'occurrence', occurrence.id, {
    type: 'operator_recovery_attempt',
    actor: 'command_handler',
    evidenceDetermination: 'retry_with_new_attempt',
    statement: 'retried automatically',
    attemptId: next.id,
    attemptNumber: n + 1,
    adoptionKey: attemptContext(next).adoptionKey,
    priorDisposition: 'ambiguous',
    leaseExpiresAt,
  });
}

/** The definition a claimed occurrence not yet dispatched would launch, as `r` holds it. */
async function undispatchedDefinition(
  r: StoreReader | StoreTransaction,
  occurrenceId: string,
): Promise<AutomationDefinition | undefined> {
  const occurrence = await r.get<OccurrenceRecord['data']>(KINDS.occurrence, occurrenceId);
  if (
    occurrence === undefined ||
    occurrence.data.snapshot.value !== OccurrenceState.claimed ||
    occurrence.data.attributes.activeRunRef !== undefined
  )
    return undefined;
  const definition = await r.get<AutomationDefinition>(
    DEFINITION_REVISION_KIND,
    revisionId(occurrence.data.attributes.automationId, occurrence.data.attributes.automationRevision),
  );
  return definition?.data;
}

/** `launchBeforeAdoptionCommit`: calls the runtime for a claimed occurrence before anything is committed. */
async function launchAhead(
  svc: EngineServices,
  ahead: AutomationDefinition | undefined,
  occurrenceId: string,
): Promise<void> {
  if (ahead === undefined) return;
  const runId = runIdFor(occurrenceId);
  await svc.runtime(ahead.runtimeRequirements?.runtimeId ?? 'coven-code')?.launch(
    {
      sessionKey: `${attemptIdFor(runId, 1)}#1`,
      automationId: ahead.automationId,
      occurrenceId,
      runId,
      attemptId: attemptIdFor(runId, 1),
      attemptNumber: 1,
      prompt: ahead.action.prompt,
      deadlineAt: svc.clock.now().toISOString(),
    },
    svc.clock.now(),
  );
}
