import { scheduleRef } from '../schedule/schedule-extension.js';
import { allowsOverlap } from '../schedule/overlap-extension.js';
import type { PlanningTerms } from './definition-directory.js';
import { createExecutionEntity, type StepContext } from './lifecycle.js';
import { occurrenceIdFor, occurrenceInput, occurrenceKeyFor } from './occurrence-input.js';
import { KINDS, type OccurrenceAttributes } from './records.js';

/** The records that say whether a slot is taken (see {@link slotTaken}). */
export const slotReads = (occurrenceId: string, key: string) =>
  [
    [KINDS.occurrence, occurrenceId],
    [KINDS.occurrenceKey, key],
  ] as const;

/**
 * One occurrence per slot: a second planner (another engine, a backfill) finds the slot taken and plans nothing. A
 * scheduled occurrence's id is derived from its slot, so its record fences the slot while it exists; the slot's key
 * record is written only when retention compacts the occurrence (see compaction.ts): writing it at planning would
 * cost a burst one more random index leaf per occurrence. Stores written before keep their keys, which this reads
 * too.
 */
export async function slotTaken(step: StepContext, occurrenceId: string, key: string): Promise<boolean> {
  await step.tx.prefetch?.(slotReads(occurrenceId, key), []);
  return (
    (await step.tx.get(KINDS.occurrence, occurrenceId)) !== undefined ||
    (await step.tx.get(KINDS.occurrenceKey, key)) !== undefined
  );
}

/** How a slot's occurrence came to be planned, beyond the slot itself. */
export interface SlotOrigin {
  /** Older due slots that collapsed into this one (the misfire is recorded by the planner). */
  collapsed: boolean;
  /** Planned by an operator's backfill at this instant rather than by the schedule. */
  backfilledAt?: string;
}

/**
 * Plans the occurrence of one slot of a definition revision, unless the slot is taken; its id, or undefined.
 * Planning and backfill both come here, so a slot has one occurrence, ever, whoever asks for it.
 */
export async function planSlotOccurrence(
  step: StepContext,
  terms: PlanningTerms,
  slot: Date,
  origin: SlotOrigin = { collapsed: false },
): Promise<string | undefined> {
  const { automationId } = terms;
  const key = occurrenceKeyFor(automationId, slot);
  const occurrenceId = occurrenceIdFor(automationId, slot);
  if (await slotTaken(step, occurrenceId, key)) return undefined;
  const attributes: OccurrenceAttributes = {
    automationId,
    automationRevision: terms.revision,
    definitionDigest: terms.integrity,
    occurrenceKey: key,
    scheduledFor: slot.toISOString(),
    triggerIdentity: { kind: 'schedule.slot', rruleRef: scheduleRef(terms) },
    stateReason: origin.backfilledAt === undefined ? 'slot_fenced' : 'slot_fenced by backfill',
    misfireDisposition: origin.collapsed ? 'collapsed_to_latest' : 'none',
    createdAt: step.now,
    updatedAt: step.now,
    observedAt: step.now,
    ...(origin.backfilledAt === undefined ? {} : { backfill: { requestedAt: origin.backfilledAt } }),
    ...(allowsOverlap(terms) ? { overlap: 'allow' as const } : {}),
  };
  const input = occurrenceInput(occurrenceId, terms, slot.toISOString());
  await createExecutionEntity(step, 'occurrence', occurrenceId, input, attributes, 'slot_fenced');
  return occurrenceId;
}
