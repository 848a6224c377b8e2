import type { LaunchOutcome, QueuedLaunch } from './launch-outcome.js';
import type { StepContext } from './lifecycle.js';

/** Whatever runs one step in its own transaction (the engine's services). */
interface StepRunner {
  step<R>(body: (step: StepContext) => Promise<R>): Promise<R>;
}

/** What a step that may queue a launch committed, and the launch it queued (the caller's to release). */
export interface LaunchingCommit<T> {
  value: T;
  queued: QueuedLaunch | undefined;
}

/**
 * Runs `body` in one step whose transaction may queue a launch, and settles that launch by whether the commit
 * stood. Committed: the launch is durably `sending` and this engine's to answer for, so when something after the
 * commit fails it is sent before the failure is reported. Not committed: the launch is not this engine's and is
 * forgotten; `uncommitted` says what the caller gets instead (by default, the failure). `body` queues its launch as
 * its last step: a launch queued by a body that then throws is not known here, so it would stay held.
 *
 * @example
 * const { queued } = await commitLaunching(svc, async (step) => ({ value: undefined, queued: await queue(step, id) }));
 * const outcome = await queued?.release();
 */
export async function commitLaunching<T>(
  svc: StepRunner,
  body: (step: StepContext) => Promise<{ value: T; queued: QueuedLaunch | undefined }>,
  uncommitted: (error: unknown) => Promise<LaunchingCommit<T>> = (error) => Promise.reject(error),
): Promise<LaunchingCommit<T>> {
  let committed = false;
  let queued: QueuedLaunch | undefined;
  try {
    const value = await svc.step(async (step) => {
      // First of the step's after-commit hooks: whatever runs after it, the commit is known durable.
      step.afterCommit?.push(() => (committed = true));
      // The store may run a transaction's body again: a launch queued by a run that did not commit is forgotten.
      queued?.abandon();
      queued = undefined;
      const done = await body(step);
      queued = done.queued;
      return done.value;
    });
    return { value, queued };
  } catch (error) {
    if (committed) {
      await queued?.release();
      throw error;
    }
    queued?.abandon();
    return uncommitted(error);
  }
}

/**
 * Releases one launch and reports it as a pass's dispatch does: the outcome kept in `outcomes`, an engine refusal
 * (integrity) and a throw in `errors`, the throw named by `what` (`dispatcher: <what>: …`).
 */
export async function reportLaunch(
  what: string,
  release: () => Promise<LaunchOutcome | undefined>,
  outcomes: LaunchOutcome[],
  errors: Error[],
): Promise<void> {
  try {
    const outcome = await release();
    if (outcome !== undefined) outcomes.push(outcome);
    // The engine refused to launch (integrity): an operator must hear of it, not only the records.
    if (outcome?.error !== undefined) errors.push(outcome.error);
  } catch (error) {
    errors.push(new Error(`dispatcher: ${what}: ${(error as Error).message}`, { cause: error }));
  }
}
