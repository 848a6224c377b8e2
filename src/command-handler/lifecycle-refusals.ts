import { DefinitionState } from '../../machines/index.js';
import { ContractError, isContractError } from '../contract/errors.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import type { RequirementsVerdict } from '../guards/common.js';

/** The lifecycle events a definition command sends, with the state each one moves a definition to. */
const TARGET = {
  definition_activated: 'active',
  definition_paused: 'paused',
  definition_disabled: 'disabled',
  definition_reenabled: 'paused',
  definition_tombstoned: 'tombstoned',
} as const;
type LifecycleEvent = keyof typeof TARGET;

/** Each state of definition.v1 in words: what it means for the schedule. */
const STATE_WORDS: Readonly<Record<string, string>> = {
  draft: 'a draft (created, not yet validated)',
  paused: 'paused (validated, not scheduled)',
  active: 'active (scheduled)',
  disabled: 'disabled (it never reactivates on its own)',
  invalid: 'invalid (its body or dependencies cannot be met)',
};

const REVISE = 'definition.revise.v1';
const ACTIVATE = 'definition.activate.v1';
const REENABLE = 'x-coven-automata.definition.reenable.v1';

/** The states each event moves from, and the command path that brings a definition there from the others. */
const PATH_TO_SOURCE: Readonly<Record<string, readonly string[]>> = {
  draft: [REVISE],
  invalid: [REVISE],
  disabled: [REENABLE],
};

/** Which state an event needs, in words. */
const NEEDS: Readonly<Record<LifecycleEvent, string>> = {
  definition_activated: 'only a paused definition is activated',
  definition_paused: 'only an active definition is paused',
  definition_disabled: 'only a paused or active definition is disabled',
  definition_reenabled: 'only a disabled definition is re-enabled',
  definition_tombstoned: 'a tombstone is final',
};

function unmetRequirements(definition: AutomationDefinition, verdict: RequirementsVerdict): string[] {
  const unmet: string[] = [];
  if (!verdict.runtime) {
    const asked = definition.runtimeRequirements?.runtimeId;
    const registered = verdict.registeredRuntimes;
    unmet.push(
      asked === undefined
        ? 'it names no runtime (runtimeRequirements)'
        : `runtime ${JSON.stringify(asked)} is not registered` +
            (registered === undefined ? '' : ` (registered: ${registered.join(', ') || 'none'})`),
    );
  }
  if (!verdict.familiar) unmet.push('binding.familiarId names no familiar');
  if (!verdict.authority) unmet.push('binding.authority names no approvalPolicyRef');
  return unmet;
}

/** The commands that would bring a definition from `state` to where `event` is what the caller wants. */
function nextCommands(event: LifecycleEvent, state: string, command: string): string[] {
  if (event === 'definition_reenabled') return [];
  const target = TARGET[event];
  if (state === DefinitionState.active && target === DefinitionState.paused) return [command];
  const path = PATH_TO_SOURCE[state] ?? [];
  if (event === 'definition_paused') return state === DefinitionState.paused ? [] : [...path, ACTIVATE, command];
  return [...path, command];
}

/**
 * A machine's refusal of a lifecycle command, told as its cause and its fix: the state in words, what the
 * command needs, the unmet requirements of an activation (naming the runtime and the registered ones), and
 * `nextCommands`, the contract commands that would move the definition. The code stays the contract's
 * ILLEGAL_TRANSITION (422), with the machine's own details kept.
 *
 * @example
 * ```ts
 * explainLifecycleRefusal(error, 'definition.activate.v1', 'definition_activated', body, verdict);
 * // ILLEGAL_TRANSITION: definition gpu is paused (validated, not scheduled) and cannot be activated:
 * //   runtime "gpu-runner" is not registered (registered: coven-code); next: definition.revise.v1, ...
 * ```
 */
export function explainLifecycleRefusal(
  error: unknown,
  command: string,
  event: LifecycleEvent,
  definition: AutomationDefinition,
  verdict: RequirementsVerdict | undefined,
): unknown {
  if (!isContractError(error) || error.code !== 'ILLEGAL_TRANSITION') return error;
  const state = String(error.details?.state ?? '');
  const id = definition.automationId;
  const unmet = verdict === undefined || state !== DefinitionState.paused ? [] : unmetRequirements(definition, verdict);
  let cause: string;
  let next: string[];
  if (unmet.length > 0) {
    cause = `definition ${id} is paused and cannot be activated: ${unmet.join('; ')}`;
    next = [REVISE, ACTIVATE];
  } else if (TARGET[event] === state && event !== 'definition_reenabled') {
    cause = `definition ${id} is already ${state}`;
    next = [];
  } else {
    cause = `definition ${id} is ${STATE_WORDS[state] ?? state}; ${NEEDS[event]}`;
    next = nextCommands(event, state, command);
  }
  const registered = verdict?.registeredRuntimes;
  return new ContractError(
    'ILLEGAL_TRANSITION',
    next.length === 0 ? cause : `${cause}; next: ${next.join(', then ')}`,
    {
      ...error.details,
      automationId: id,
      cause,
      nextCommands: next,
      ...(unmet.length === 0 ? {} : { unmet: unmetNames(verdict!) }),
      ...(unmet.length === 0 || registered === undefined ? {} : { registeredRuntimes: [...registered] }),
    },
  );
}

const unmetNames = (verdict: RequirementsVerdict): string[] =>
  (['runtime', 'familiar', 'authority'] as const).filter((name) => !verdict[name]);

export type { LifecycleEvent };
