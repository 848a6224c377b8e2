import { bindingOf } from './authority.js';
import type { OccurrenceInput } from '../guards/occurrence.js';
import type { PlanningTerms } from './definition-directory.js';

export const occurrenceIdFor = (automationId: string, slot: Date) => `${automationId}-${slot.getTime()}`;
export const occurrenceKeyFor = (automationId: string, slot: Date) => `${automationId}@${slot.toISOString()}`;

/** The machine input of a new occurrence: everything its guards need, pinned from one definition revision. */
export function occurrenceInput(
  occurrenceId: string,
  definition: PlanningTerms,
  scheduledFor: string,
): OccurrenceInput {
  return {
    occurrenceId,
    automationId: definition.automationId,
    automationRevision: definition.revision,
    definitionDigest: definition.integrity.value,
    scheduledFor,
    retryPolicy: {
      maxAttempts: definition.policies.retry.maxAttempts,
      backoffPolicy: definition.policies.retry.backoffPolicy,
      ...(definition.policies.retry.backoffSeconds === undefined
        ? {}
        : { backoffSeconds: definition.policies.retry.backoffSeconds }),
      retryableClasses: definition.policies.retry.retryableClasses ?? [],
    },
    perRunMinutes: definition.policies.timeout.perRunMinutes,
    // attempt.retry.v1 refuses runs under a Runtime Authority binding, so no hold is opened for one.
    operatorHold: bindingOf(definition) === undefined,
  };
}

/**
 * Planning never looks further back than this; older missed slots are out of the misfire window. Retention
 * relies on it too: the key of a slot older than this fences nothing and may go.
 */
export const PLANNING_LOOKBACK_DAYS = 15;
