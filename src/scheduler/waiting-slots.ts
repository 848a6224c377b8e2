import { OccurrenceState } from '../../machines/index.js';
import type { PlannableDefinition } from '../domain/definition-directory.js';
import type { StepContext } from '../domain/lifecycle.js';
import { KINDS, type OccurrenceRecord } from '../domain/records.js';
import { overlapOf, waitsWhileBusy } from '../schedule/overlap-extension.js';

/**
 * Whether an occurrence that finds its automation busy waits its turn (stays eligible) instead of being skipped as
 * overlapping: a backfilled slot, or a slot of a definition whose slots wait while it is busy (overlap extension).
 */
export const waitsItsTurn = (occurrence: OccurrenceRecord, definition: PlannableDefinition): boolean =>
  occurrence.data.attributes.backfill !== undefined || waitsWhileBusy(overlapOf(definition.terms));

/**
 * Whether an older slot of the automation is due and waiting too (planned or eligible): waiting slots run oldest
 * first, whichever of them a pass (or an engine) happens to look at first.
 */
export async function olderWaiting(
  reader: StepContext['tx'],
  occurrence: OccurrenceRecord,
  now: number,
): Promise<boolean> {
  const { automationId, scheduledFor } = occurrence.data.attributes;
  return (await reader.liveWork(KINDS.occurrence, { automationId })).some(
    (work) =>
      work.id !== occurrence.id &&
      (work.state === OccurrenceState.planned || work.state === OccurrenceState.eligible) &&
      work.scheduledFor !== null &&
      work.scheduledFor < scheduledFor &&
      Date.parse(work.scheduledFor) <= now,
  );
}
