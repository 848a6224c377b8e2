import { redactPublished, redactText } from '../contract/redaction.js';
import type { StoreTransaction } from '../store/store.js';
import { storeStream, type ChangefeedContext, type NewEvent, type StreamRef } from './event-envelope.js';
import { storedEvent } from './stored-event.js';

/** Where an appended event went: its stream and its sequence there (its event id derives from both). */
export interface AppendedEvent {
  stream: StreamRef;
  sequence: number;
}

/**
 * Appends one event inside `tx`, as a compare-and-set on the stream head. The store keeps it in its compact form
 * (see {@link storedEvent}); every read rebuilds the contract's envelope.
 *
 * @example
 * ```ts
 * await appendEvent(tx, feed, { stream: { kind: 'automation', id: 'nightly' }, kind: 'definition.paused',
 *   summary: 'definition nightly paused', payload: { revision: 2 }, automationId: 'nightly' });
 * ```
 */
export async function appendEvent(
  tx: StoreTransaction,
  context: ChangefeedContext,
  event: NewEvent,
): Promise<AppendedEvent> {
  const key = storeStream(event.stream);
  const sequence = event.newStream === true ? 0 : await tx.head(key);
  const { adoptionKey, correlationId } = event;
  const stored = storedEvent(event.stream, context.producer, {
    recordedAt: context.now,
    ...(event.observedAt === undefined ? {} : { observedAt: event.observedAt }),
    ...(adoptionKey === undefined && correlationId === undefined
      ? {}
      : {
          causation: {
            ...(adoptionKey === undefined ? {} : { adoptionKey }),
            ...(correlationId === undefined ? {} : { correlationId }),
          },
        }),
    ...(event.automationId === undefined ? {} : { automationId: event.automationId }),
    ...(event.occurrenceId === undefined ? {} : { occurrenceId: event.occurrenceId }),
    ...(event.runId === undefined ? {} : { runId: event.runId }),
    ...(event.attemptId === undefined ? {} : { attemptId: event.attemptId }),
    kind: event.kind,
    // Published as is to every reader: no prompt text, absolute path or credential may ride along.
    summary: redactText(event.summary).slice(0, 300),
    payload: redactPublished(event.payload),
  });
  // Built here and given up: a store that keeps entries as objects need not copy it.
  await tx.append(key, stored, sequence, { handOver: true });
  return { stream: event.stream, sequence };
}
