import { machinesInUse } from '../domain/machine-set.js';
import { DefinitionState } from '../../machines/index.js';
import { transitionEntity, updateEntityAttributes } from '../actors/entity-transition.js';
import { pureTransition } from '../actors/pure-transition.js';
import { ContractError } from '../contract/errors.js';
import {
  checkDefinitionSemantics,
  checkDefinitionShape,
  nextBody,
  type AutomationDefinition,
  type LifecycleState,
} from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  bodyLifecycleState,
  type DefinitionAttributes,
  type DefinitionRecord,
} from '../domain/definition-records.js';
import { stateOf } from '../domain/records.js';
import type { RequirementsVerdict } from '../guards/common.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commitRevision, loadForMutation, principalOf } from './definition-commands.js';

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
  const snapshot = machinesInUse().definition.resolveState(record.data.snapshot as never);
  const event = reviseEvent(now, revision);
  return snapshot.can(event as never)
    ? String(pureTransition(machinesInUse().definition, snapshot, event)[0].value)
    : undefined;
}

/** A revise carries the next revision: the one after the revision it expects to replace. */
function requireNextRevision(body: AutomationDefinition, expected: number): void {
  if (body.revision !== expected + 1) {
    throw new ContractError(
      'VALIDATION_FAILED',
      `a revise of revision ${expected} must carry revision ${expected + 1}, not ${body.revision}`,
      {
        field: 'payload.definition.revision',
      },
    );
  }
}

/** ILLEGAL_TRANSITION unless the body names the state the revise leaves the definition in. */
function requireReviseTarget(record: DefinitionRecord, body: AutomationDefinition, now: string): void {
  const state = stateOf(record);
  const target = reviseTarget(record, now, body.revision);
  if (target === undefined || body.lifecycleState !== target) {
    const writes = target === undefined ? '' : ` (it writes ${target})`;
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `a revise of a ${state} definition cannot write ${body.lifecycleState}${writes}`,
      {
        machine: 'definition.v1',
        state,
        requested: body.lifecycleState,
      },
    );
  }
}

/** The attributes a revise commits: the new body, updated now. */
const revisedAttributes =
  (body: AutomationDefinition, now: string) =>
  (a: DefinitionAttributes): DefinitionAttributes => ({
    ...a,
    definition: body,
    updatedAt: now,
  });

/** A draft or invalid definition takes the new body through definition_revise_committed (to paused). */
async function reviseThroughMachine(
  ctx: CommandContext,
  state: string,
  body: AutomationDefinition,
): Promise<CommandOutcome> {
  const id = body.automationId;
  const committed = await transitionEntity(
    ctx.tx,
    machinesInUse().definition,
    DEFINITION_KIND,
    id,
    reviseEvent(ctx.now, body.revision),
    revisedAttributes(body, ctx.now),
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

/** An active definition whose new body cannot run any more is committed and invalidated, not silently kept active. */
async function invalidateOnRevise(
  ctx: CommandContext,
  body: AutomationDefinition,
  requirements: RequirementsVerdict,
): Promise<CommandOutcome> {
  const id = body.automationId;
  const committed = await transitionEntity<DefinitionAttributes>(
    ctx.tx,
    machinesInUse().definition,
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

/** A paused or active definition keeps its state and takes the new body; an active one plans from now on. */
async function reviseInPlace(
  ctx: CommandContext,
  record: DefinitionRecord,
  body: AutomationDefinition,
): Promise<CommandOutcome> {
  const id = body.automationId;
  const state = stateOf(record);
  // Schedule revisions are future-only: a revised active definition plans from now on.
  await updateEntityAttributes<DefinitionAttributes>(ctx.tx, DEFINITION_KIND, id, record.version, (a) => ({
    ...revisedAttributes(body, ctx.now)(a),
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

/** definition.revise.v1: a new body; draft and invalid definitions move to paused through the machine. */
export async function reviseDefinition(ctx: CommandContext): Promise<CommandOutcome> {
  const expected = ctx.envelope.expectedRevision!;
  const body = checkDefinitionShape(ctx.envelope.payload.definition);
  const record = await loadForMutation(ctx.tx, body.automationId, expected);
  checkDefinitionSemantics(body);
  requireNextRevision(body, expected);
  requireReviseTarget(record, body, ctx.now);
  const state = stateOf(record);
  if (!REVISED_IN_PLACE.has(state)) return reviseThroughMachine(ctx, state, body);
  const requirements = ctx.requirements(body);
  if (state === DefinitionState.active && !(requirements.familiar && requirements.authority && requirements.runtime)) {
    return invalidateOnRevise(ctx, body, requirements);
  }
  return reviseInPlace(ctx, record, body);
}
