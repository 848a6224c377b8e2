import { OccurrenceState } from '../../machines/index.js';
import { loadOccurrence } from '../domain/entities.js';
import type { LaunchOutcome, QueuedLaunch } from '../domain/launch-outcome.js';
import type { StepContext } from '../domain/lifecycle.js';
import { stateOf } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import { claimWhenEligible } from './occurrences.js';

/**
 * How far planning carries each occurrence it plans, inside the plan's own commit, as a manual run does: a due
 * slot is then one commit from nothing to a launch marked `sending`, instead of one commit per phase with every
 * other due slot's planning, claim and dispatch queued in between. Without a carry the occurrence stays planned
 * and the pass's advance and dispatch phases take it on.
 */
export interface PlanCarry {
  /** `claimed`: claimed when eligible; `launched`: also its run accepted and its launch queued and marked sending. */
  through: 'claimed' | 'launched';
  /** Called once, before the first plan, when something is due: the owner lease must be live before launches. */
  beforePlanning(): Promise<void>;
  /** Accepts the claimed occurrence's run and queues its launch in `step` (the engine's dispatcher). */
  queue(step: StepContext, occurrenceId: string): Promise<QueuedLaunch | undefined>;
}

/** What one definition's planning commit did. */
export interface CarriedPlan {
  /** The occurrence planned, if one was. */
  occurrenceId: string | undefined;
  /** Whether it was claimed in the same commit. */
  claimed: boolean;
  /** Sends its launch: queued and marked `sending` in that commit, which is durable. */
  release?: () => Promise<LaunchOutcome>;
}

/**
 * Claims an occurrence planned in this same transaction when it is eligible now and its automation has no live
 * work; with live work it is left eligible for the advance phase, which first settles what is past its deadline.
 */
async function claimPlanned(svc: EngineServices, step: StepContext, occurrenceId: string): Promise<boolean> {
  await claimWhenEligible(svc, step, await loadOccurrence(step.tx, occurrenceId), true);
  return stateOf(await loadOccurrence(step.tx, occurrenceId)) === OccurrenceState.claimed;
}

/**
 * Commits one definition's planning (`plan`), carried as far as `carry` says. What the carry adds can fail on its
 * own (a claim or dispatch that throws): then the plan is committed alone and the later phases of the pass claim
 * and dispatch it, reporting what fails there, so a dispatch problem never costs a slot its planning. The launch
 * queued is the caller's to release; a failure after the commit sends it before the failure is reported.
 */
export async function commitPlan(
  svc: EngineServices,
  plan: (step: StepContext, carrying: PlanCarry['through'] | undefined) => Promise<string | undefined>,
  carry: PlanCarry | undefined,
): Promise<CarriedPlan> {
  let committed = false;
  let queued: QueuedLaunch | undefined;
  const commit = (carrying: PlanCarry | undefined) =>
    svc.step(async (step) => {
      // First of the step's after-commit hooks: whatever runs after it, the commit is known durable.
      step.afterCommit?.push(() => (committed = true));
      // The store may run a transaction's body again: a launch queued by a run that did not commit is forgotten.
      queued?.abandon();
      queued = undefined;
      const occurrenceId = await plan(step, carrying?.through);
      const claimed =
        occurrenceId !== undefined && carrying !== undefined && (await claimPlanned(svc, step, occurrenceId));
      if (claimed && carrying.through === 'launched') queued = await carrying.queue(step, occurrenceId);
      return { occurrenceId, claimed };
    });
  let done: Omit<CarriedPlan, 'release'>;
  try {
    done = await commit(carry);
  } catch (error) {
    if (committed) {
      await queued?.release();
      throw error;
    }
    queued?.abandon();
    if (carry === undefined) throw error;
    return commit(undefined);
  }
  const launch: QueuedLaunch | undefined = queued;
  return launch === undefined ? done : { ...done, release: () => launch.release() };
}
