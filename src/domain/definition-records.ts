import { DefinitionState } from '../../machines/index.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import type { StoredRecord } from '../store/store.js';
import type { AutomationDefinition, LifecycleState } from './definition-body.js';

/** Record kind of a definition: its definition.v1 snapshot and the current body. */
export const DEFINITION_KIND = 'definition';
/** Every committed revision body, sealed: revision-pins-history reads them back. */
export const DEFINITION_REVISION_KIND = 'definition-revision';

export interface DefinitionAttributes {
  definition: AutomationDefinition;
  createdAt: string;
  updatedAt: string;
  tombstonedAt: string | null;
  /** Slots before this instant are never planned: the last activation, or the last revise while active. */
  scheduleEffectiveFrom?: string;
}

export type DefinitionRecord = StoredRecord<EntityRecord<DefinitionAttributes>>;

export const revisionId = (automationId: string, revision: number) => `${automationId}@${revision}`;

/**
 * The `lifecycleState` a definition body carries, derived from the committed definition.v1 state: the
 * machine's own, except `tombstoned`, which the body records as its `deletion` while keeping the last state
 * it was in (the contract's body has no tombstoned lifecycle state).
 */
export function bodyLifecycleState(machineState: string, previous: LifecycleState): LifecycleState {
  return machineState === DefinitionState.tombstoned ? previous : (machineState as LifecycleState);
}
