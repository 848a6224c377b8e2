import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import type { LogEntry, ReadLogOptions, StoreReader } from '../store/store.js';
import {
  eventIdFor,
  readStoreId,
  storeStream,
  type EventEnvelope,
  type ProducerIdentity,
  type StreamKind,
  type StreamRef,
} from './event-envelope.js';

/** The component this engine names itself in the events it produces by default. */
const ENGINE_COMPONENT = 'coven-automata';

/** Every envelope this engine writes is published operationally and kept for the standard window. */
const PRIVACY: EventEnvelope['privacy'] = { classification: 'operational', retention: { classification: 'standard' } };

/**
 * How a store keeps one changefeed event: the contract's envelope without what the entry's place and the store
 * already say (stream, sequence, the event id derived from them) and without the constants every envelope carries
 * (schema version, privacy); the observation instant only when it is not the recording instant, and the producer
 * as its instance id when it is this engine's component. About half the bytes of the envelope, written with every
 * transition; {@link envelopeOf} rebuilds the envelope, member for member and in the same order, when it is read.
 */
export interface StoredEvent {
  recordedAt: string;
  observedAt?: string;
  /** The producer's instance id, when the producer is this engine's component and says nothing else. */
  by?: string;
  producer?: ProducerIdentity;
  causation?: EventEnvelope['causation'];
  automationId?: string;
  occurrenceId?: string;
  runId?: string;
  attemptId?: string;
  kind: EventEnvelope['kind'];
  summary: string;
  payload: Record<string, unknown>;
}

/** Stores written before events were kept compactly hold whole envelopes, which read as they are. */
const isWholeEnvelope = (data: StoredEvent | EventEnvelope): data is EventEnvelope => 'schemaVersion' in data;

/** The compact form of an event a producer recorded now (see {@link StoredEvent}). */
export function storedEvent(producer: ProducerIdentity, event: Omit<StoredEvent, 'by' | 'producer'>): StoredEvent {
  const { recordedAt, observedAt, ...rest } = event;
  const plain = producer.component === ENGINE_COMPONENT && Object.keys(producer).length === 2;
  return {
    recordedAt,
    ...(observedAt === undefined || observedAt === recordedAt ? {} : { observedAt }),
    ...(plain ? { by: producer.instanceId } : { producer }),
    ...rest,
  };
}

/** `occurrence/occ-1` → the stream it names (an id may hold slashes, a kind never does). */
function streamOf(key: string): StreamRef {
  const slash = key.indexOf('/');
  return { kind: key.slice(0, slash) as StreamKind, id: key.slice(slash + 1) };
}

/** The contract's envelope of a changefeed entry of the store `storeId`, whichever form the store kept it in. */
export function envelopeOf(entry: LogEntry, storeId: string): EventEnvelope {
  const data = entry.data as StoredEvent | EventEnvelope;
  if (isWholeEnvelope(data)) return data;
  const { recordedAt, observedAt, by, producer, causation, automationId, occurrenceId, runId, attemptId } = data;
  const stream = streamOf(entry.stream);
  return {
    schemaVersion: SCHEMA_VERSION,
    eventId: eventIdFor(storeId, stream, entry.sequence),
    stream,
    sequence: entry.sequence,
    recordedAt,
    observedAt: observedAt ?? recordedAt,
    producer: producer ?? { component: ENGINE_COMPONENT, instanceId: by! },
    ...(causation === undefined ? {} : { causation }),
    ...(automationId === undefined ? {} : { automationId }),
    ...(occurrenceId === undefined ? {} : { occurrenceId }),
    ...(runId === undefined ? {} : { runId }),
    ...(attemptId === undefined ? {} : { attemptId }),
    kind: data.kind,
    summary: data.summary,
    payload: data.payload,
    privacy: PRIVACY,
  };
}

/** When an entry's event was recorded, without rebuilding its envelope. */
export const recordedAtOf = (entry: LogEntry): string => (entry.data as StoredEvent | EventEnvelope).recordedAt;

/** The entries with their events as the contract's envelopes. */
async function withEnvelopes(reader: StoreReader, entries: LogEntry[]): Promise<Array<LogEntry<EventEnvelope>>> {
  if (entries.length === 0) return [];
  const storeId = (await readStoreId(reader)) ?? 'empty';
  return entries.map((entry) => ({ ...entry, data: envelopeOf(entry, storeId) }));
}

/**
 * A changefeed stream's entries, each with its event as the contract's envelope.
 *
 * @example
 * ```ts
 * const events = await store.read((r) => readEventLog(r, { kind: 'occurrence', id: 'occ-1' }));
 * ```
 */
export async function readEventLog(
  reader: StoreReader,
  stream: StreamRef,
  options?: ReadLogOptions,
): Promise<Array<LogEntry<EventEnvelope>>> {
  return withEnvelopes(reader, await reader.readLog(storeStream(stream), options));
}

/**
 * The global feed's entries in commit order (`after` is a global position), each with its event as the contract's
 * envelope.
 *
 * @example
 * ```ts
 * const page = await store.read((r) => readEventFeed(r, { after: -1, limit: 100 }));
 * ```
 */
export async function readEventFeed(
  reader: StoreReader,
  options?: ReadLogOptions,
): Promise<Array<LogEntry<EventEnvelope>>> {
  return withEnvelopes(reader, await reader.readFeed(options));
}
