import { machinesInUse } from '../domain/machine-set.js';
import { transitionEntity } from '../actors/entity-transition.js';
import type { EventKind } from '../changefeed/event-envelope.js';
import { nextBody, type AutomationDefinition, type LifecycleState } from '../domain/definition-body.js';
import { DEFINITION_KIND, bodyLifecycleState, type DefinitionAttributes } from '../domain/definition-records.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commitRevision, loadForMutation, principalOf } from './definition-commands.js';
import { explainLifecycleRefusal } from './lifecycle-refusals.js';
import { cancelUnlaunchedWork } from './tombstone-cleanup.js';

interface LifecycleCommand {
  event:
    | 'definition_activated'
    | 'definition_paused'
    | 'definition_disabled'
    | 'definition_reenabled'
    | 'definition_tombstoned';
  eventKind: EventKind;
  verb: string;
}

export const LIFECYCLE_COMMANDS: Record<string, LifecycleCommand> = {
  'definition.activate.v1': { event: 'definition_activated', eventKind: 'definition.activated', verb: 'activated' },
  'definition.pause.v1': { event: 'definition_paused', eventKind: 'definition.paused', verb: 'paused' },
  'definition.disable.v1': { event: 'definition_disabled', eventKind: 'definition.disabled', verb: 'disabled' },
  // The contract has no event kind for re-enabling; the definition is paused again, so it reports that.
  'x-coven-automata.definition.reenable.v1': {
    event: 'definition_reenabled',
    eventKind: 'definition.paused',
    verb: 're-enabled (paused)',
  },
  'definition.tombstone.v1': { event: 'definition_tombstoned', eventKind: 'definition.tombstoned', verb: 'tombstoned' },
};

/** The machine event a lifecycle command sends; activation carries the requirements verdict it is guarded on. */
function lifecycleEvent(ctx: CommandContext, spec: LifecycleCommand, current: AutomationDefinition, revision: number) {
  return {
    type: spec.event,
    actor: 'command_handler',
    now: ctx.now,
    revision,
    ...(spec.event === 'definition_activated' ? { requirements: ctx.requirements(current) } : {}),
    ...(spec.event === 'definition_reenabled' ? { explicit: true } : {}),
  };
}

/**
 * The attributes a lifecycle command commits once the machine chose the new state: the next body (with its
 * deletion record on a tombstone), the tombstone time, and a fresh schedule start on activation.
 */
function lifecycleAttributes(
  ctx: CommandContext,
  spec: LifecycleCommand,
  current: AutomationDefinition,
  revision: number,
  reason: string | undefined,
) {
  const tombstone = spec.event === 'definition_tombstoned';
  return (a: DefinitionAttributes, to: string): DefinitionAttributes => {
    const lifecycleState = bodyLifecycleState(to, current.lifecycleState);
    const definition = nextBody(current, {
      revision,
      lifecycleState,
      now: ctx.now,
      principalId: principalOf(ctx),
      ...(tombstone
        ? {
            deletion: {
              tombstoned: true as const,
              requestedAt: ctx.now,
              requestedBy: { principalId: principalOf(ctx) },
              ...(reason === undefined ? {} : { reason }),
            },
          }
        : {}),
    });
    return {
      ...a,
      definition,
      updatedAt: ctx.now,
      tombstonedAt: tombstone ? ctx.now : a.tombstonedAt,
      ...(spec.event === 'definition_activated' ? { scheduleEffectiveFrom: ctx.now } : {}),
    };
  };
}

/** activate / pause / disable / re-enable / tombstone: one machine event each, one new revision. */
export async function changeLifecycle(ctx: CommandContext, spec: LifecycleCommand): Promise<CommandOutcome> {
  const id = ctx.envelope.payload.automationId as string;
  const reason = ctx.envelope.payload.reason as string | undefined;
  const record = await loadForMutation(ctx.tx, id, ctx.envelope.expectedRevision!);
  const current = record.data.attributes.definition;
  const revision = current.revision + 1;
  const tombstone = spec.event === 'definition_tombstoned';
  const event = lifecycleEvent(ctx, spec, current, revision);
  const committed = await transitionEntity<DefinitionAttributes>(
    ctx.tx,
    machinesInUse().definition,
    DEFINITION_KIND,
    id,
    event,
    lifecycleAttributes(ctx, spec, current, revision, reason),
  ).catch((error: unknown) => {
    throw explainLifecycleRefusal(error, ctx.envelope.command, spec.event, current, event.requirements);
  });
  const body = committed.record.data.attributes.definition;
  const cancelled = tombstone
    ? await cancelUnlaunchedWork(
        { tx: ctx.tx, feed: ctx.feed, now: ctx.now, adoptionKey: ctx.envelope.adoptionKey },
        id,
      )
    : [];
  const outcome = await commitRevision(
    ctx,
    id,
    body,
    spec.eventKind,
    `definition ${id} ${spec.verb} (revision ${revision})`,
    committed.to as LifecycleState | 'tombstoned',
  );
  outcome.result = {
    automationId: id,
    lifecycleState: committed.to,
    revision,
    ...(reason === undefined ? {} : { reason }),
    ...(tombstone ? { tombstoned: true, tombstonedAt: ctx.now, cancelledOccurrences: cancelled } : {}),
  };
  return outcome;
}
