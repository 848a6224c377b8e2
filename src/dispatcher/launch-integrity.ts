import { verifyIntegrity } from '../contract/digest.js';
import { DefinitionIntegrityError } from '../domain/launch-outcome.js';
import type { AutomationDefinition } from '../domain/definition-body.js';

/**
 * Recomputes the RFC 8785 digest of the revision a launch executes and compares it with the digest the
 * revision carries and the one its occurrence pinned when it was planned. Returns the error when any differs.
 */
export function integrityProblem(
  definition: AutomationDefinition,
  pinned: string | undefined,
): DefinitionIntegrityError | undefined {
  let verdict: ReturnType<typeof verifyIntegrity>;
  try {
    verdict = verifyIntegrity(definition as unknown as Record<string, unknown>);
  } catch {
    verdict = { valid: false, expected: definition.integrity?.value, actual: 'an unhashable value' };
  }
  if (verdict.valid && verdict.actual === pinned) return undefined;
  return new DefinitionIntegrityError(definition.automationId, definition.revision, {
    computed: verdict.actual,
    carried: verdict.expected ?? null,
    pinned: pinned ?? null,
  });
}
