import { leaveGates, passFlowGates } from '../domain/flow-gates.js';
import type { PlannableDefinition } from '../domain/definition-directory.js';
import type { StepContext } from '../domain/lifecycle.js';
import type { OccurrenceRecord } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';

/**
 * Where a claim is made: the pass's advance phase (every candidate of this engine, best-ranked first), planning's
 * own commit, or a set-based claim batch. The last two see candidates in no rank order, so a claim a limit governs
 * is left to the advance phase.
 */
export type ClaimPath = 'advance' | 'planning' | 'batch';

/**
 * Notes held work once its step committed, so the step's own commit (a waiter written at a gate) does not count as
 * one that may have freed it; a step that rolls back notes nothing and its work is looked at again.
 */
function noteHeld(svc: EngineServices, step: StepContext, occurrenceId: string, retryAt: number | null): void {
  if (step.afterCommit === undefined) svc.waitingWork.note(occurrenceId, retryAt);
  else step.afterCommit.push(() => svc.waitingWork.note(occurrenceId, retryAt));
}

/**
 * Eligible work that waits its turn behind its automation's work: the commit that ends that work wakes a pass.
 * Meanwhile it gives up its place at any gate, so work it outranks is not held back by a waiter that cannot run.
 */
export async function waitsForCommit(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  definition: PlannableDefinition,
): Promise<false> {
  const candidate = {
    occurrenceId: occurrence.id,
    terms: definition.terms,
    dueAt: occurrence.data.attributes.scheduledFor,
  };
  await leaveGates(step.tx, candidate);
  noteHeld(svc, step, occurrence.id, null);
  return false;
}

/**
 * Flow control (x-coven-automata.limits.v1) at a claim: whether a limit holds it back, leaving the occurrence
 * eligible until the limit lets it through (a rate limit's reopening, or the commit that ends work in flight).
 * `unranked` claims (planning's, a batch's) leave governed work to the pass's ranked advance phase.
 */
export async function heldBackByLimits(
  svc: EngineServices,
  step: StepContext,
  occurrence: OccurrenceRecord,
  definition: PlannableDefinition,
  unranked: boolean,
): Promise<boolean> {
  const occurrenceId = occurrence.id;
  const candidate = { occurrenceId, terms: definition.terms, dueAt: occurrence.data.attributes.scheduledFor };
  const admission = await passFlowGates(step.tx, candidate, step.now, unranked);
  if (admission.deferred === true) return true;
  if (!admission.admitted) {
    noteHeld(svc, step, occurrenceId, admission.retryAt ?? null);
    return true;
  }
  svc.waitingWork.clear(occurrenceId);
  return false;
}
