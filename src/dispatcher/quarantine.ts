import type { AutomationDefinition } from '../domain/definition-body.js';
import type { DefinitionIntegrityError, QuarantineRequest } from '../domain/launch-outcome.js';
import type { StepContext } from '../domain/lifecycle.js';
import { imposeQuarantine } from '../domain/quarantine.js';

/** The quarantine a launch refused for integrity imposes: the stored revision's digest is not the expected one. */
export function integrityQuarantine(
  definition: AutomationDefinition,
  integrity: DefinitionIntegrityError,
): QuarantineRequest {
  const { computed, carried, pinned } = integrity.details as {
    computed: string;
    carried: string | null;
    pinned: string | null;
  };
  return {
    automationId: definition.automationId,
    reason: integrity.message,
    cause: {
      kind: 'definition_integrity',
      computedDigest: computed,
      expectedDigest: computed !== carried ? carried : pinned,
    },
  };
}

/**
 * Quarantines the automation a launch outcome names, in the step that committed the outcome (the dispatcher
 * imposes it: exhausted retries and integrity refusals are found while applying a launch).
 */
export async function quarantineAutomation(step: StepContext, request: QuarantineRequest): Promise<void> {
  await imposeQuarantine(step, request.automationId, {
    actor: 'dispatcher',
    reason: request.reason,
    cause: request.cause,
  });
}
