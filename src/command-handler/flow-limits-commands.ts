import { ContractError } from '../contract/errors.js';
import type { AutomationDefinition } from '../domain/definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import { gatesOf } from '../domain/flow-gates.js';
import {
  checkFlowLimits,
  EMPTY_GATE,
  FLOW_KINDS,
  FLOW_SETTINGS_ID,
  type FlowGate,
  type FlowLimits,
  type FlowSettings,
} from '../domain/flow-limits.js';
import { OCCURRENCE_LIVE } from '../domain/records.js';
import type { OccurrenceState } from '../../machines/index.js';
import type { StoreTransaction } from '../store/store.js';
import type { CommandContext, CommandOutcome } from './context.js';

/**
 * The live occurrences each capped gate of `limits` holds: read from live work and the revision each occurrence
 * pinned, so a cap set (or raised from nothing) while work runs counts that work from its first claim on.
 */
async function inFlightByGate(tx: StoreTransaction, limits: FlowLimits): Promise<Map<string, string[]>> {
  const held = new Map<string, string[]>();
  for (const work of await tx.liveWork('occurrence')) {
    if (!OCCURRENCE_LIVE.has(work.state as OccurrenceState)) continue;
    if (work.automationId === null || work.automationRevision === null) continue;
    const pinned = await tx.get<AutomationDefinition>(
      DEFINITION_REVISION_KIND,
      revisionId(work.automationId, work.automationRevision),
    );
    if (pinned === undefined) continue;
    for (const gate of gatesOf(limits, pinned.data)) {
      if (gate.inFlight === undefined) continue;
      held.set(gate.key, [...(held.get(gate.key) ?? []), work.id]);
    }
  }
  return held;
}

/** Writes each capped gate's in-flight list as live work holds it now; rate windows and waiters are kept. */
async function countLiveWork(tx: StoreTransaction, limits: FlowLimits): Promise<Record<string, number>> {
  const held = await inFlightByGate(tx, limits);
  const capped = [
    ...Object.keys(limits.runtimes ?? {}).map((id) => `runtime:${id}`),
    ...Object.entries(limits.tags ?? {})
      .filter(([, limit]) => limit.inFlight !== undefined)
      .map(([tag]) => `tag:${tag}`),
  ].sort();
  const counted: Record<string, number> = {};
  for (const key of capped) {
    const record = await tx.get<FlowGate>(FLOW_KINDS.gate, key);
    const inFlight = held.get(key) ?? [];
    counted[key] = inFlight.length;
    const gate: FlowGate = { ...(record?.data ?? EMPTY_GATE), inFlight };
    await tx.put(FLOW_KINDS.gate, key, gate, { expectedVersion: record?.version ?? null });
  }
  return counted;
}

/**
 * x-coven-automata.limits.set.v1: replaces the store's caps and tag rate limits (validated against
 * flow-limits.schema.json) and counts the work each cap already holds. With `expectedLimitsRevision`, limits
 * someone else set since are REVISION_CONFLICT, not overwritten.
 */
export async function setFlowLimits(ctx: CommandContext): Promise<CommandOutcome> {
  const payload = ctx.envelope.payload as { limits: unknown; expectedLimitsRevision?: number };
  const limits = checkFlowLimits(payload.limits);
  const before = await ctx.tx.get<FlowSettings>(FLOW_KINDS.settings, FLOW_SETTINGS_ID);
  const revision = before?.data.revision ?? 0;
  const expected = payload.expectedLimitsRevision;
  if (expected !== undefined && expected !== revision)
    throw new ContractError('REVISION_CONFLICT', `the limits are at revision ${revision}, not ${expected}`, {
      expectedRevision: expected,
      actualRevision: revision,
    });
  const settings: FlowSettings = { limits, setAt: ctx.now, revision: revision + 1 };
  await ctx.tx.put(FLOW_KINDS.settings, FLOW_SETTINGS_ID, settings, { expectedVersion: before?.version ?? null });
  const inFlight = await countLiveWork(ctx.tx, limits);
  return { result: { revision: settings.revision, setAt: ctx.now, limits, inFlight } };
}
