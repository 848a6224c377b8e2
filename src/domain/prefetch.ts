import { storeStream } from '../changefeed/event-envelope.js';
import type { StoreTransaction } from '../store/store.js';
import { KINDS } from './records.js';

/** A record a step is about to read: `[kind, id]`. */
export type RecordKey = readonly [kind: string, id: string];

/** The execution records one attempt belongs to. */
export interface AttemptParties {
  attemptId: string;
  runId: string;
  occurrenceId: string;
}

/**
 * Asks the store at once for what a step that moves an attempt, its run and its occurrence reads: the three
 * records, the run's hold, and the heads of the run's and the occurrence's streams, with any `also` the step
 * needs. Where each read is a round trip (PostgreSQL) that is two statements instead of one per read; elsewhere
 * nothing (see `StoreTransaction.prefetch`).
 *
 * @example
 * ```ts
 * await prefetchAttemptParties(step.tx, outbox.entry, [[PENDING_LAUNCH, outboxId]]);
 * const attempt = await loadAttempt(step.tx, outbox.entry.attemptId); // answered from the transaction
 * ```
 */
export async function prefetchAttemptParties(
  tx: StoreTransaction,
  { attemptId, runId, occurrenceId }: AttemptParties,
  also: readonly RecordKey[] = [],
): Promise<void> {
  if (tx.prefetch === undefined) return;
  await tx.prefetch(
    [[KINDS.attempt, attemptId], [KINDS.run, runId], [KINDS.occurrence, occurrenceId], [KINDS.runHold, runId], ...also],
    [storeStream({ kind: 'run', id: runId }), storeStream({ kind: 'occurrence', id: occurrenceId })],
  );
}
