import { ContractError } from '../contract/errors.js';
import type { CwdRoots } from '../runtime/cwd-roots.js';
import type { RequirementsCheck } from './context.js';
import type { AutomationDefinition } from '../domain/definition-body.js';

/** What a requirements check needs of a runtime: its id and, when it confines sessions, its roots. */
export interface ConfinedRuntime {
  readonly runtimeId: string;
  readonly cwdRoots?: CwdRoots;
}

/**
 * Wraps a requirements check so that activating (or revising while active) a definition whose `action.cwd`
 * lies outside its runtime's roots is refused with VALIDATION_FAILED naming the field and the roots, and
 * nothing is committed. VALIDATION_FAILED, not CAPABILITY_UNSUPPORTED: the engine supports `action.cwd`;
 * this value of it is not acceptable under the engine's configuration.
 *
 * @example
 * ```ts
 * createEngine({
 *   store,
 *   runtimes: [runtime],
 *   requirements: confineCwd([runtime], defaultRequirements(['coven-code'])),
 * });
 * ```
 */
export function confineCwd(runtimes: readonly ConfinedRuntime[], next: RequirementsCheck): RequirementsCheck {
  return (definition: AutomationDefinition) => {
    const runtimeId = definition.runtimeRequirements?.runtimeId ?? 'coven-code';
    const roots = runtimes.find((r) => r.runtimeId === runtimeId)?.cwdRoots;
    if (roots !== undefined) {
      const location = roots.locate(definition.action.cwd);
      if (!location.inside) {
        throw new ContractError(
          'VALIDATION_FAILED',
          `definition ${definition.automationId}: ${roots.refusal(location)}`,
          {
            field: 'action.cwd',
            cwd: definition.action.cwd ?? null,
            resolved: location.path,
            roots: [...roots.roots],
            problems: [`action.cwd: ${roots.problem(location)}`],
          },
        );
      }
    }
    return next(definition);
  };
}
