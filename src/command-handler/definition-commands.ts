import { machinesInUse } from '../domain/machine-set.js';
import { DefinitionState } from '../../machines/index.js';
import { createEntity, type EntityRecord } from '../actors/entity-transition.js';
import { appendEvent } from '../changefeed/append-event.js';
import type { EventKind } from '../changefeed/event-envelope.js';
import { ContractError } from '../contract/errors.js';
import { pureInitialTransition } from '../actors/pure-transition.js';
import type { StoreTransaction } from '../store/store.js';
import type { CommandContext, CommandOutcome } from './context.js';
import {
  checkDefinitionSemantics,
  checkDefinitionShape,
  type AutomationDefinition,
  type LifecycleState,
} from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  DEFINITION_REVISION_KIND,
  revisionId,
  type DefinitionAttributes,
  type DefinitionRecord,
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

/** Records the new revision's body and appends its changefeed event; the outcome names both. */
export async function commitRevision(
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

/** The principal a command acts for, recorded on the bodies it writes. */
export const principalOf = (ctx: CommandContext): string => ctx.envelope.origin.principal.principalId;

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
  const [initial] = pureInitialTransition(machinesInUse().definition, { automationId: id, revision: 1 });
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
    machinesInUse().definition,
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
