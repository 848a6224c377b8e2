import type { AutomationDefinition } from './definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from './definition-records.js';
import type { StoreTransaction } from '../store/store.js';
import type { OccurrenceRecord } from './records.js';

/** Settled occurrences wait for retention here: one kind per class, ids ordered by when they settled. */
export const retentionQueueKind = (retentionClass: string) => `retention-due/${retentionClass}`;
export const queueId = (settledAt: string, occurrenceId: string) => `${settledAt}|${occurrenceId}`;
/** Sorts after every `<settledAt>|<id>` of the same instant: a range bound that includes that instant. */
export const AFTER_INSTANT = '|\u{10FFFF}';

export interface RetentionDue {
  occurrenceId: string;
  settledAt: string;
  /** Class of the receipts (`policies.retention.receipts`, else the occurrence's own). */
  receiptsClass: string;
  /** Present when the occurrence is gone and only its longer-kept receipts wait. */
  receiptIds?: string[];
}

/**
 * Queues a settled occurrence for retention, in the transaction that settled it. The class comes from the
 * revision the occurrence pinned; `legal_hold` history is never queued. `backfilledFrom`: a backfill, settled then.
 */
export async function queueForRetention(
  step: { tx: StoreTransaction; now: string },
  occurrence: OccurrenceRecord,
  backfilledFrom?: string,
): Promise<void> {
  const settledAt = backfilledFrom ?? step.now;
  const { automationId, automationRevision } = occurrence.data.attributes;
  const revision = await step.tx.get<AutomationDefinition>(
    DEFINITION_REVISION_KIND,
    revisionId(automationId, automationRevision),
  );
  const retention = revision?.data.policies.retention;
  const occurrenceClass = retention?.occurrenceHistory?.classification ?? 'standard';
  if (occurrenceClass === 'legal_hold') return;
  const kind = retentionQueueKind(occurrenceClass);
  const id = queueId(settledAt, occurrence.id);
  // Only a backfill can meet an entry already there (the settling transaction queued it under that instant).
  if (backfilledFrom !== undefined && (await step.tx.get(kind, id)) !== undefined) return;
  const due: RetentionDue = {
    occurrenceId: occurrence.id,
    settledAt,
    receiptsClass: retention?.receipts?.classification ?? occurrenceClass,
  };
  await step.tx.put(kind, id, due, { expectedVersion: null });
}

/** Compacted occurrences wait here until their streams are retired whole; ids ordered by when that is due. */
export const RETIRE_QUEUE_KIND = 'retire-due';

export interface RetireDue {
  occurrenceId: string;
  /** When the streams go: the snapshot window after compaction, and never while the slot could be planned. */
  retireAt: string;
  /** The occurrence's and its runs' streams (`occurrence/<id>`, `run/<id>`), each down to its snapshot. */
  streams: string[];
  /** The occurrence-key record that fenced the slot (or the manual request) since compaction. */
  occurrenceKey: string;
}
