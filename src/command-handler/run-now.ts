import { DefinitionState } from '../../machines/index.js';
import { sha256Hex } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  DEFINITION_REVISION_KIND,
  revisionId,
  type DefinitionRecord,
} from '../domain/definition-records.js';
import { passFlowGates } from '../domain/flow-gates.js';
import { allowsOverlap } from '../schedule/overlap-extension.js';
import { FLOW_KINDS, FLOW_SETTINGS_ID } from '../domain/flow-limits.js';
import { createExecutionEntity, liveWorkOf, type StepContext } from '../domain/lifecycle.js';
import { occurrenceInput } from '../domain/occurrence-input.js';
import { KINDS, type OccurrenceAttributes } from '../domain/records.js';
import { isQuarantined, type EngineServices } from '../domain/services.js';
import type { CommandContext, CommandOutcome, CommandReads, ImmediateLaunches } from './context.js';
import { commandStep, notFound } from './operator-lookups.js';

/**
 * The definition a manual run starts from: it exists, is active and unquarantined, and has no live work
 * (overlap is forbidden, unless its overlap policy is `allow`), checked in that order.
 */
async function requireRunnableDefinition(ctx: CommandContext, automationId: string): Promise<DefinitionRecord> {
  const definitionRecord = await ctx.tx.get<DefinitionRecord['data']>(DEFINITION_KIND, automationId);
  if (definitionRecord === undefined) throw notFound('definition', automationId);
  const state = definitionRecord.data.snapshot.value;
  if (state === DefinitionState.tombstoned)
    throw new ContractError('GONE_TOMBSTONED', `definition ${automationId} is tombstoned`, { automationId });
  if (state !== DefinitionState.active)
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `definition ${automationId} is ${state}; only an active definition runs`,
      { automationId, state },
    );
  if (await isQuarantined(ctx.tx, automationId)) {
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${automationId} is quarantined after exhausted retries`, {
      automationId,
      quarantined: true,
    });
  }
  const live = allowsOverlap(definitionRecord.data.attributes.definition)
    ? undefined
    : await liveWorkOf(ctx.tx, automationId);
  if (live !== undefined)
    throw new ContractError(
      'OVERLAP_FORBIDDEN',
      `automation ${automationId} has live work (${live}); overlap is forbidden`,
      { automationId, occurrenceId: live },
    );
  return definitionRecord as DefinitionRecord;
}

/**
 * Creates the manual occurrence, keyed by the command's adoption key so a replayed request names the same
 * occurrence, with its occurrence-key reservation.
 */
async function createManualOccurrence(
  ctx: CommandContext,
  step: StepContext,
  automationId: string,
  definition: AutomationDefinition,
): Promise<{ occurrenceId: string; occurrenceKey: string }> {
  const occurrenceId = `occ-manual-${sha256Hex(ctx.envelope.adoptionKey).slice(0, 32)}`;
  const occurrenceKey = `${automationId}@manual-${ctx.envelope.adoptionKey}`.slice(0, 320);
  await ctx.tx.put(KINDS.occurrenceKey, occurrenceKey, { occurrenceId }, { expectedVersion: null });
  await createExecutionEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    occurrenceInput(occurrenceId, definition, ctx.now),
    {
      automationId,
      automationRevision: definition.revision,
      definitionDigest: definition.integrity,
      occurrenceKey,
      scheduledFor: ctx.now,
      triggerIdentity: { kind: 'manual.request', requestedBy: ctx.envelope.origin.principal },
      stateReason: 'manual request',
      misfireDisposition: 'none',
      createdAt: ctx.now,
      updatedAt: ctx.now,
      observedAt: ctx.now,
      ...(allowsOverlap(definition) ? { overlap: 'allow' as const } : {}),
    },
    'manual_request',
  );
  return { occurrenceId, occurrenceKey };
}

/**
 * A manual run counts against the automation's limits (x-coven-automata.limits.v1) like a scheduled claim, but is
 * never queued: a cap or rate limit that holds it back refuses the command (retryable), nothing written.
 */
async function admitManualRun(ctx: CommandContext, occurrenceId: string, definition: AutomationDefinition) {
  const admission = await passFlowGates(
    ctx.tx,
    { occurrenceId, terms: definition, dueAt: ctx.now, manual: true },
    ctx.now,
  );
  if (admission.admitted) return;
  const gates = admission.refused.map((v) => `${v.key} (${v.refusal === 'rate' ? 'rate limit spent' : 'cap full'})`);
  throw new ContractError(
    'CONCURRENCY_LIMIT',
    `automation ${definition.automationId} is held back by ${gates.join(', ')}; try again later`,
    {
      automationId: definition.automationId,
      gates: admission.refused.map((v) => ({ key: v.key, refusal: v.refusal })),
      ...(admission.retryAt === undefined ? {} : { retryAfter: new Date(admission.retryAt).toISOString() }),
    },
    { retryable: true },
  );
}

/**
 * What a manual run reads before it writes: the automation's live occurrences (its overlap check), the store's
 * flow limits, and the revision its launch pins, at the revision this engine last saw the definition at (a stale
 * guess costs a row).
 */
export function runNowReads(svc: EngineServices, payload: Record<string, unknown>): CommandReads {
  const { automationId } = payload;
  if (typeof automationId !== 'string') return {};
  const known = svc.definitions.remembered(automationId);
  return {
    liveOccurrencesOf: automationId,
    records: [
      [FLOW_KINDS.settings, FLOW_SETTINGS_ID],
      ...(known === undefined
        ? []
        : [[DEFINITION_REVISION_KIND, revisionId(automationId, known.terms.revision)] as const]),
    ],
  };
}

/**
 * occurrence.runNow.v1: a manual occurrence, claimed, its run accepted and its launch queued and marked `sending`
 * in the command's own commit, and the runtime called once that commit is durable (adoption before the side
 * effect). The dispatcher's transitions carry no command causation, as when a pass dispatches them.
 */
export async function runNow(
  svc: EngineServices,
  launches: ImmediateLaunches,
  ctx: CommandContext,
): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  const definitionRecord = await requireRunnableDefinition(ctx, automationId);
  const s = commandStep(ctx);
  const { occurrenceId, occurrenceKey } = await createManualOccurrence(
    ctx,
    s,
    automationId,
    definitionRecord.data.attributes.definition,
  );
  await admitManualRun(ctx, occurrenceId, definitionRecord.data.attributes.definition);
  const leaseExpiresAt = await svc.actors.scheduler.claimForManualRun(svc, s, occurrenceId);
  const dispatched: StepContext = { tx: ctx.tx, feed: ctx.feed, now: ctx.now, committed: [], afterCommit: [] };
  const launch = await launches.queue(dispatched, occurrenceId);
  return {
    automationId,
    result: { automationId, occurrenceId, occurrenceKey, status: 'claimed', leaseExpiresAt },
    afterCommit: async () => {
      try {
        for (const learn of dispatched.afterCommit!) learn();
        svc.committedTransitions(dispatched.committed!);
      } finally {
        // The commit is durable and the launch `sending`: it is sent whatever a hook before it did.
        await launch?.release();
      }
    },
    ...(launch === undefined ? {} : { onRollback: () => launch.abandon() }),
  };
}
