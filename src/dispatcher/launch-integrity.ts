import { verifyIntegrity } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import type { AutomationDefinition } from '../command-handler/definition-body.js';

/**
 * The definition revision about to be executed does not match its integrity digest: the store served bytes
 * other than those committed. Nothing is launched; the automation is quarantined until an operator looks.
 */
export class DefinitionIntegrityError extends ContractError {
  constructor(
    automationId: string,
    revision: number,
    details: { computed: string; carried: string | null; pinned: string | null },
  ) {
    super(
      'INTERNAL',
      `definition ${automationId} revision ${revision} failed its integrity check before launch: its stored body digests to ` +
        `${details.computed}, but it carries ${details.carried ?? 'no digest'} and the occurrence pins ${details.pinned ?? 'no digest'}; ` +
        'nothing was launched and the automation is quarantined (check the store, then lift the quarantine)',
      { automationId, revision, ...details },
    );
    this.name = 'DefinitionIntegrityError';
  }
}

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
