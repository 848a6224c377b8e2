import { definitionMachine, DefinitionState } from '../../machines/index.js';
import {
  createEntity,
  readEntity,
  transitionEntity,
  updateEntityAttributes,
  type EntityRecord,
} from '../actors/entity-transition.js';
import { appendEvent, type EventKind } from '../changefeed/event-envelope.js';
import { ContractError } from '../contract/errors.js';
import { pureInitialTransition, pureTransition } from '../actors/pure-transition.js';
import type { StoreTransaction } from '../store/store.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { cancelUnlaunchedWork } from './tombstone-cleanup.js';
import {
  checkDefinitionSemantics,
  checkDefinitionShape,
  nextBody,
  type AutomationDefinition,
  type LifecycleState,
} from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  DEFINITION_REVISION_KIND,
  revisionId,
  type DefinitionAttributes,
  type DefinitionRecord,
  bodyLifecycleState,
} from '../domain/definition-records.js';
import { stateOf } from '../domain/records.js';

/** NOT_FOUND, then GONE_TOMBSTONED, then REVISION_CONFLICT: the contract's check order. */
export async function loadForMutation(
  tx: StoreTransaction,
  automationId: string,
  expectedRevision: number,
): Promise<DefinitionRecord> {
  const record = await tx.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, automationId);
  if (record === undefined)
    throw new ContractError('NOT_FOUND', `no definition with id ${automationId}`, { automationId });
  const current = record.data.attributes.definition.revision;
  if (stateOf(record) === DefinitionState.tombstoned) {
    throw new ContractError(
      'GONE_TOMBSTONED',
      `definition ${automationId} is tombstoned; its history stays readable but it cannot change`,
      {
        automationId,
        tombstonedAt: record.data.attributes.tombstonedAt,
      },
      { currentRevision: current },
    );
  }
  if (current !== expectedRevision) {
    throw new ContractError(
      'REVISION_CONFLICT',
      `definition ${automationId} is at revision ${current}, not ${expectedRevision}`,
      {
        automationId,
        currentRevision: current,
        expectedRevision,
      },
      { currentRevision: current },
    );
  }
  return record;
}

async function commitRevision(
  ctx: CommandContext,
  automationId: string,
  body: AutomationDefinition,
  kind: EventKind,
  summary: string,
  lifecycleState: LifecycleState | 'tombstoned',
): Promise<CommandOutcome> {
  await ctx.tx.put(DEFINITION_REVISION_KIND, revisionId(automationId, body.revision), body, {
    expectedVersion: null,
    terminal: true,
  });
  const event = await appendEvent(ctx.tx, ctx.feed, {
    stream: { kind: 'automation', id: automationId },
    kind,
    summary,
    payload: { revision: body.revision, definitionDigest: body.integrity, lifecycleState },
    automationId,
    adoptionKey: ctx.envelope.adoptionKey,
    ...(ctx.envelope.origin.correlationId === undefined ? {} : { correlationId: ctx.envelope.origin.correlationId }),
  });
  return {
    automationId,
    revision: body.revision,
    eventRef: { stream: `automation/${automationId}`, sequence: event.sequence },
    result: { automationId, revision: body.revision, lifecycleState, definition: body },
  };
}

const principalOf = (ctx: CommandContext) => ctx.envelope.origin.principal.principalId;

/** definition.create.v1: a new definition, revision 1, in `draft` (the machine's initial state). */
export async function createDefinition(ctx: CommandContext): Promise<CommandOutcome> {
  const body = checkDefinitionShape(ctx.envelope.payload.definition);
  const id = body.automationId;
  const existing = await ctx.tx.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, id);
  if (existing !== undefined) {
    const currentRevision = existing.data.attributes.definition.revision;
    if (stateOf(existing) === DefinitionState.tombstoned) {
      throw new ContractError(
        'GONE_TOMBSTONED',
        `definition ${id} is tombstoned; its id cannot be reused`,
        { automationId: id },
        { currentRevision },
      );
    }
    throw new ContractError(
      'REVISION_CONFLICT',
      `definition ${id} already exists at revision ${currentRevision}`,
      { automationId: id, currentRevision },
      { currentRevision },
    );
  }
  checkDefinitionSemantics(body);
  if (body.revision !== 1)
    throw new ContractError('VALIDATION_FAILED', `a new definition has revision 1, not ${body.revision}`, {
      field: 'payload.definition.revision',
    });
  const [initial] = pureInitialTransition(definitionMachine, { automationId: id, revision: 1 });
  const initialState = String(initial.value) as LifecycleState;
  if (body.lifecycleState !== initialState) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `definition.v1 starts in ${initialState}; a create cannot write ${body.lifecycleState}`,
      {
        machine: 'definition.v1',
        state: 'none',
        requested: body.lifecycleState,
      },
    );
  }
  await createEntity<DefinitionAttributes>(
    ctx.tx,
    definitionMachine,
    DEFINITION_KIND,
    id,
    { automationId: id, revision: 1 },
    {
      definition: body,
      createdAt: ctx.now,
      updatedAt: ctx.now,
      tombstonedAt: null,
    },
  );
  const summary = `definition ${id} created (revision 1, ${initialState})`;
  return commitRevision(ctx, id, body, 'definition.created', summary, initialState);
}

/** A revise keeps a paused or active definition in place: its new schedule applies from now on. */
const REVISED_IN_PLACE: ReadonlySet<string> = new Set<LifecycleState>([DefinitionState.paused, DefinitionState.active]);

/** definition_revise_committed as the command handler sends it for a validated body. */
const reviseEvent = (now: string, revision: number) => ({
  type: 'definition_revise_committed',
  actor: 'command_handler',
  now,
  revision,
  validation: { valid: true, problems: [] },
});

/**
 * The state a revise leaves the definition in: where it is when revised in place, else where the machine
 * takes definition_revise_committed from here; undefined when the machine refuses it.
 */
function reviseTarget(record: DefinitionRecord, now: string, revision: number): string | undefined {
  const state = stateOf(record);
  if (REVISED_IN_PLACE.has(state)) return state;
  const snapshot = definitionMachine.resolveState(record.data.snapshot as never);
  const event = reviseEvent(now, revision);
  return snapshot.can(event as never) ? String(pureTransition(definitionMachine, snapshot, event)[0].value) : undefined;
}

/** definition.revise.v1: a new body; draft and invalid definitions move to paused through the machine. */
export async function reviseDefinition(ctx: CommandContext): Promise<CommandOutcome> {
  const expected = ctx.envelope.expectedRevision!;
  const body = checkDefinitionShape(ctx.envelope.payload.definition);
  const id = body.automationId;
  const record = await loadForMutation(ctx.tx, id, expected);
  checkDefinitionSemantics(body);
  if (body.revision !== expected + 1) {
    throw new ContractError(
      'VALIDATION_FAILED',
      `a revise of revision ${expected} must carry revision ${expected + 1}, not ${body.revision}`,
      {
        field: 'payload.definition.revision',
      },
    );
  }
  const state = stateOf(record);
  const target = reviseTarget(record, ctx.now, body.revision);
  if (target === undefined || body.lifecycleState !== target) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `a revise of a ${state} definition cannot write ${body.lifecycleState}${target === undefined ? '' : ` (it writes ${target})`}`,
      {
        machine: 'definition.v1',
        state,
        requested: body.lifecycleState,
      },
    );
  }
  const attributes = (a: DefinitionAttributes): DefinitionAttributes => ({
    ...a,
    definition: body,
    updatedAt: ctx.now,
  });
  if (!REVISED_IN_PLACE.has(state)) {
    const committed = await transitionEntity(
      ctx.tx,
      definitionMachine,
      DEFINITION_KIND,
      id,
      reviseEvent(ctx.now, body.revision),
      attributes,
    );
    return commitRevision(
      ctx,
      id,
      body,
      'definition.revised',
      `definition ${id} revised to revision ${body.revision} (${state} -> ${committed.to})`,
      committed.to as LifecycleState,
    );
  }
  const requirements = ctx.requirements(body);
  if (state === DefinitionState.active && !(requirements.familiar && requirements.authority && requirements.runtime)) {
    // An active definition whose new body cannot run any more is committed and invalidated, not silently kept active.
    const committed = await transitionEntity<DefinitionAttributes>(
      ctx.tx,
      definitionMachine,
      DEFINITION_KIND,
      id,
      {
        type: 'definition_invalidated',
        actor: 'command_handler',
        now: ctx.now,
        revision: body.revision,
        validation: { valid: true, problems: [] },
        requirements,
      },
      (a, to) => ({
        ...a,
        definition: nextBody(body, {
          revision: body.revision,
          lifecycleState: bodyLifecycleState(to, body.lifecycleState),
          now: ctx.now,
          principalId: principalOf(ctx),
        }),
        updatedAt: ctx.now,
      }),
    );
    return commitRevision(
      ctx,
      id,
      committed.record.data.attributes.definition,
      'definition.invalidated',
      `definition ${id} revision ${body.revision} cannot run: invalidated`,
      committed.to as LifecycleState,
    );
  }
  // Schedule revisions are future-only: a revised active definition plans from now on.
  await updateEntityAttributes<DefinitionAttributes>(ctx.tx, DEFINITION_KIND, id, record.version, (a) => ({
    ...attributes(a),
    ...(state === DefinitionState.active ? { scheduleEffectiveFrom: ctx.now } : {}),
  }));
  return commitRevision(
    ctx,
    id,
    body,
    'definition.revised',
    `definition ${id} revised to revision ${body.revision}`,
    state as LifecycleState,
  );
}

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

/** activate / pause / disable / re-enable / tombstone: one machine event each, one new revision. */
export async function changeLifecycle(ctx: CommandContext, spec: LifecycleCommand): Promise<CommandOutcome> {
  const id = ctx.envelope.payload.automationId as string;
  const reason = ctx.envelope.payload.reason as string | undefined;
  const record = await loadForMutation(ctx.tx, id, ctx.envelope.expectedRevision!);
  const current = record.data.attributes.definition;
  const revision = current.revision + 1;
  const tombstone = spec.event === 'definition_tombstoned';
  const committed = await transitionEntity<DefinitionAttributes>(
    ctx.tx,
    definitionMachine,
    DEFINITION_KIND,
    id,
    {
      type: spec.event,
      actor: 'command_handler',
      now: ctx.now,
      revision,
      ...(spec.event === 'definition_activated' ? { requirements: ctx.requirements(current) } : {}),
      ...(spec.event === 'definition_reenabled' ? { explicit: true } : {}),
    },
    (a, to) => {
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
    },
  );
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

export async function readDefinition(
  tx: Pick<StoreTransaction, 'get'>,
  automationId: string,
): Promise<DefinitionRecord> {
  return readEntity<DefinitionAttributes>(tx as StoreTransaction, DEFINITION_KIND, automationId);
}
