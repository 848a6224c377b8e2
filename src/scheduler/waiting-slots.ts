import { OccurrenceState } from '../../machines/index.js';
import type { PlannableDefinition } from '../domain/definition-directory.js';
import { liveWorkOf, moveEntity, type StepContext } from '../domain/lifecycle.js';
import { KINDS, type OccurrenceAttributes, type OccurrenceRecord } from '../domain/records.js';
import { overlapOf, waitsWhileBusy } from '../schedule/overlap-extension.js';
import type { LiveWork, StoreReader } from '../store/store.js';

/**
 * Whether an occurrence that finds its automation busy waits its turn (stays eligible) instead of being skipped as
 * overlapping: a backfilled slot, or a slot of a definition whose slots wait while it is busy (overlap extension).
 */
export const waitsItsTurn = (occurrence: OccurrenceRecord, definition: PlannableDefinition): boolean =>
  occurrence.data.attributes.backfill !== undefined || waitsWhileBusy(overlapOf(definition.terms));

/**
 * The live occurrence of the automation that stands in the occurrence's way, if any. Under overlap `allow` none
 * does (runs go side by side), but a slot that waits its turn (a backfilled one) still waits behind them.
 */
export async function liveWorkInTheWay(
  tx: StoreReader,
  occurrence: OccurrenceRecord,
  waits: boolean,
): Promise<string | undefined> {
  const { automationId, overlap } = occurrence.data.attributes;
  if (overlap === 'allow' && !waits) return undefined;
  return liveWorkOf(tx, automationId, occurrence.id);
}

/** Whether a due slot of the definition replaces its automation's live run (overlap extension's cancel-other). */
export const cancelsOther = (definition: PlannableDefinition): boolean =>
  overlapOf(definition.terms)?.policy === 'cancel-other';

/**
 * The other slots of the occurrence's automation that are due and waiting (planned or eligible), older (`before`)
 * or newer than it: the live-work index read once, for {@link olderWaiting} and cancel-other's newer slots.
 */
export async function waitingSiblings(
  reader: StepContext['tx'],
  occurrence: OccurrenceRecord,
  now: number,
  side: 'before' | 'after',
): Promise<LiveWork[]> {
  const { automationId, scheduledFor } = occurrence.data.attributes;
  return (await reader.liveWork(KINDS.occurrence, { automationId })).filter(
    (work) =>
      work.id !== occurrence.id &&
      (work.state === OccurrenceState.planned || work.state === OccurrenceState.eligible) &&
      work.scheduledFor !== null &&
      (side === 'before' ? work.scheduledFor < scheduledFor : work.scheduledFor > scheduledFor) &&
      Date.parse(work.scheduledFor) <= now,
  );
}

/**
 * Whether an older slot of the automation is due and waiting too: waiting slots run oldest first, whichever of them
 * a pass (or an engine) happens to look at first.
 */
export const olderWaiting = async (reader: StepContext['tx'], occurrence: OccurrenceRecord, now: number) =>
  (await waitingSiblings(reader, occurrence, now, 'before')).length > 0;

/** Skips an occurrence that overlaps its automation's work (the contract's misfire transition), saying why. */
export async function skipOverlapping(step: StepContext, occurrenceId: string, why: string): Promise<false> {
  await moveEntity<OccurrenceAttributes>(
    step,
    'occurrence',
    occurrenceId,
    { type: 'misfire', actor: 'scheduler', disposition: 'skipped_overlap' },
    (a) => ({ ...a, stateReason: why, updatedAt: step.now, misfireDisposition: 'skipped_overlap' }),
  );
  return false;
}
