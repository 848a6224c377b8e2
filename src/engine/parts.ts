import { COMMAND_HANDLER_STEPS } from '../command-handler/steps.js';
import { acceptAndDispatch } from '../dispatcher/dispatcher.js';
import { DISPATCHER_STEPS } from '../dispatcher/steps.js';
import type { ActorSteps } from '../domain/actor-steps.js';
import { commitLaunching } from '../domain/launch-commit.js';
import type { LaunchOutcome, QueuedLaunch } from '../domain/launch-outcome.js';
import type { StepContext } from '../domain/lifecycle.js';
import type { EngineServices } from '../domain/services.js';
import { compactExpiredHistory, type CompactionReport } from '../retention/compaction.js';
import type { RetentionPolicy } from '../retention/policy.js';
import { SCHEDULER_STEPS } from '../scheduler/handoffs.js';
import { WORKER_STEPS } from '../worker/steps.js';
import { PASS_PHASES, type PassPhase } from './pass-phases.js';

/**
 * The parts an engine is assembled from. The engine itself only wires them; the seam exists so the invariant
 * suite can build an engine with one part wrapped (a dispatcher that calls the runtime too early, a scheduler
 * step that retries on its own) and prove its checks catch it, while production modules carry no such branch.
 * Internal: not part of the package's API.
 */
export interface EngineParts {
  /** The four contract actors' cross-actor steps. */
  actors: ActorSteps;
  /**
   * The dispatcher's handling of one claimed occurrence: `queue` accepts the run, adopts the attempt, queues the
   * launch and marks it `sending`, all in one commit of its own; once that commit is durable the launch is released.
   */
  dispatchOccurrence(
    svc: EngineServices,
    occurrenceId: string,
    queue: (step: StepContext, occurrenceId: string) => Promise<QueuedLaunch | undefined>,
  ): Promise<LaunchOutcome | undefined>;
  /**
   * The same acceptance, adoption and queued launch in the caller's transaction (a manual run claims and queues
   * in its command's one commit); returns the outbox id to release once that commit is durable.
   */
  queueLaunch(svc: EngineServices, step: StepContext, occurrenceId: string): Promise<string | undefined>;
  /** One retention sweep over settled history. */
  sweepRetention(svc: EngineServices, policy: RetentionPolicy, errors: Error[]): Promise<CompactionReport>;
  /** The phases of a pass, in order (the suite stops a pass between two of them to simulate a crash). */
  passPhases: readonly PassPhase[];
}

/** The parts every production engine is built from. */
export const ENGINE_PARTS: EngineParts = {
  actors: {
    dispatcher: DISPATCHER_STEPS,
    scheduler: SCHEDULER_STEPS,
    commandHandler: COMMAND_HANDLER_STEPS,
    worker: WORKER_STEPS,
  },
  async dispatchOccurrence(svc, occurrenceId, queue) {
    const { queued } = await commitLaunching(svc, async (step) => ({
      value: undefined,
      queued: await queue(step, occurrenceId),
    }));
    return queued?.release();
  },
  queueLaunch: acceptAndDispatch,
  sweepRetention: compactExpiredHistory,
  passPhases: PASS_PHASES,
};
