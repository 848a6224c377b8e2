// The dashboard bundles this file into the page: it may import the generated state constants and nothing else.
import { DefinitionState } from '../../machines/states.js';

/**
 * The definition lifecycle commands and the states in which each is already done: where the command would put
 * the definition, or past it (re-enabling a definition that is paused or active has nothing left to do).
 */
export const LIFECYCLE_DONE_STATES: Readonly<Record<string, readonly DefinitionState[]>> = {
  'definition.activate.v1': [DefinitionState.active],
  'definition.pause.v1': [DefinitionState.paused],
  'definition.disable.v1': [DefinitionState.disabled],
  'x-coven-automata.definition.reenable.v1': [DefinitionState.paused, DefinitionState.active],
  'definition.tombstone.v1': [DefinitionState.tombstoned],
};

/**
 * Whether a lifecycle command sent to a definition in `state` has nothing to do. The command API refuses such a
 * command (ILLEGAL_TRANSITION, as the contract says); the operator surfaces report it as done instead.
 *
 * @example
 * ```ts
 * alreadyDone('definition.activate.v1', 'active'); // true
 * alreadyDone('definition.activate.v1', 'paused'); // false
 * ```
 */
export function alreadyDone(command: string, state: string): boolean {
  return (LIFECYCLE_DONE_STATES[command] as readonly string[] | undefined)?.includes(state) ?? false;
}

/**
 * The line an operator surface prints for a lifecycle command that had nothing to do.
 *
 * @example
 * ```ts
 * alreadyDoneLine('notes', 'definition.activate.v1', 'active', 3);
 * // 'notes: already active (revision 3); nothing committed'
 * ```
 */
export function alreadyDoneLine(automationId: string, command: string, state: string, revision: number): string {
  const what = command === 'x-coven-automata.definition.reenable.v1' ? `enabled (${state})` : state;
  return `${automationId}: already ${what} (revision ${revision}); nothing committed`;
}
