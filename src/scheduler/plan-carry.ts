import { loadOccurrence } from '../domain/entities.js';
import { commitLaunching, type LaunchingCommit } from '../domain/launch-commit.js';
import type { LaunchOutcome, QueuedLaunch } from '../domain/launch-outcome.js';
import type { StepContext } from '../domain/lifecycle.js';
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
  type Planned = Omit<CarriedPlan, 'release'>;
  const commit = (carrying: PlanCarry | undefined): Promise<LaunchingCommit<Planned>> =>
    commitLaunching(
      svc,
      async (step) => {
        const occurrenceId = await plan(step, carrying?.through);
        // Claimed now when eligible and its automation has no live work; with live work it is left eligible for
        // the advance phase, which first settles what is past its deadline.
        const claimed =
          occurrenceId !== undefined &&
          carrying !== undefined &&
          (await claimWhenEligible(svc, step, await loadOccurrence(step.tx, occurrenceId), 'planning'));
        const queued =
          claimed && carrying.through === 'launched' ? await carrying.queue(step, occurrenceId) : undefined;
        return { value: { occurrenceId, claimed }, queued };
      },
      (error) => (carrying === undefined ? Promise.reject(error) : commit(undefined)),
    );
  const { value, queued } = await commit(carry);
  return queued === undefined ? value : { ...value, release: () => queued.release() };
}
