import type { LifecycleEventBase, RequirementsVerdict, ValidationVerdict } from './common.js';

/** What the definition machine remembers: the revision of its last lifecycle change. */
export interface DefinitionContext {
  automationId: string;
  revision: number;
}

export interface DefinitionInput {
  automationId: string;
  revision: number;
}

/** Every definition event commits a new revision, so each carries it. */
export interface DefinitionEventBase<T extends string> extends LifecycleEventBase<T> {
  revision: number;
}

export type DefinitionEvent =
  | (DefinitionEventBase<'definition_revise_committed'> & { validation: ValidationVerdict })
  | DefinitionEventBase<'definition_tombstoned'>
  | (DefinitionEventBase<'definition_activated'> & { requirements: RequirementsVerdict })
  | DefinitionEventBase<'definition_disabled'>
  | DefinitionEventBase<'definition_paused'>
  | (DefinitionEventBase<'definition_invalidated'> & {
      validation: ValidationVerdict;
      requirements: RequirementsVerdict;
    })
  | (DefinitionEventBase<'definition_reenabled'> & { explicit: boolean });

type Args = { context: DefinitionContext; event: DefinitionEvent };

const revisionIncremented = ({ context, event }: Args) =>
  Number.isSafeInteger(event.revision) && event.revision > context.revision;

const requirementsSatisfied = (r: RequirementsVerdict) => r.familiar && r.authority && r.runtime;

/** One pure predicate per definition.v1 guard id in state-machines.json. */
export const definitionGuards = {
  revisionValidated: (args: Args) =>
    args.event.type === 'definition_revise_committed' && args.event.validation.valid && revisionIncremented(args),
  revisionRepaired: (args: Args) =>
    args.event.type === 'definition_revise_committed' &&
    args.event.validation.valid &&
    args.event.validation.problems.length === 0 &&
    revisionIncremented(args),
  requirementsValidated: ({ event }: Args) =>
    event.type === 'definition_activated' && requirementsSatisfied(event.requirements),
  definitionUnsatisfiable: ({ event }: Args) =>
    event.type === 'definition_invalidated' && (!event.validation.valid || !requirementsSatisfied(event.requirements)),
  explicitReenable: ({ event }: Args) => event.type === 'definition_reenabled' && event.explicit === true,
};

export function createDefinitionContext(input: DefinitionInput): DefinitionContext {
  return { automationId: input.automationId, revision: input.revision };
}

/** Context after a committed definition transition. */
export function applyDefinitionEvent(context: DefinitionContext, event: DefinitionEvent): DefinitionContext {
  return { ...context, revision: event.revision };
}
