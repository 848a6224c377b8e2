import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import type { LogEntry, ReadLogOptions, StoreReader } from '../store/store.js';
import {
  eventIdFor,
  readStoreId,
  storeStream,
  streamRefOf,
  type EventEnvelope,
  type ProducerIdentity,
  type StreamKind,
  type StreamRef,
} from './event-envelope.js';

/** The component this engine names itself in the events it produces by default. */
const ENGINE_COMPONENT = 'coven-automata';

/** Every envelope this engine writes is published operationally and kept for the standard window. */
const PRIVACY: EventEnvelope['privacy'] = Object.freeze({
  classification: 'operational',
  retention: Object.freeze({ classification: 'standard' }),
});

/**
 * How a store keeps one changefeed event: the contract's envelope without what the entry's place and the store
 * already say (stream, sequence, the event id derived from them, the occurrence or run id a stream is named by) and
 * without the constants every envelope carries (schema version, privacy); the observation instant only when it is
 * not the recording instant, the producer as its instance id when it is this engine's component, and a transition's
 * summary only when it is not the one its entity, ids and states say. Well under half the bytes of the envelope,
 * written with every transition; {@link envelopeOf} rebuilds the envelope, member for member and in the same order,
 * when it is read.
 */
export interface StoredEvent {
  recordedAt: string;
  observedAt?: string;
  /** The producer's instance id, when the producer is this engine's component and says nothing else. */
  by?: string;
  producer?: ProducerIdentity;
  causation?: EventEnvelope['causation'];
  automationId?: string;
  /** Left out on an occurrence's stream when it is the stream's id; null there when the event names none. */
  occurrenceId?: string | null;
  /** Left out on a run's stream when it is the stream's id; null there when the event names none. */
  runId?: string | null;
  attemptId?: string;
  kind: EventEnvelope['kind'];
  /** Left out when it is {@link transitionSummary}'s. */
  summary?: string;
  payload: Record<string, unknown>;
}

/** What an event links to, as the envelope says it. */
type Links = Pick<EventEnvelope, 'automationId' | 'occurrenceId' | 'runId' | 'attemptId'>;

/** What a stored event is made from: the envelope's members but those its place and the store say. */
export type RecordedEvent = Links &
  Pick<EventEnvelope, 'recordedAt' | 'causation' | 'kind' | 'summary' | 'payload'> & { observedAt?: string };

/** Stores written before events were kept compactly hold whole envelopes, which read as they are. */
const isWholeEnvelope = (data: StoredEvent | EventEnvelope): data is EventEnvelope => 'schemaVersion' in data;

/** What a transition's summary says unless its writer said otherwise: `occurrence occ-1 planned -> eligible`. */
function transitionSummary(kind: string, links: Links, payload: Record<string, unknown>): string | undefined {
  const { entity, from, to } = payload;
  if (!kind.endsWith('.transitioned') || typeof from !== 'string' || typeof to !== 'string') return undefined;
  const id =
    entity === 'occurrence'
      ? links.occurrenceId
      : entity === 'run'
        ? links.runId
        : entity === 'attempt'
          ? links.attemptId
          : undefined;
  return id === undefined ? undefined : `${String(entity)} ${id} ${from} -> ${to}`;
}

/** How the id member `kind`'s streams are named by is kept on `stream`: left out when it is the stream's id. */
function keptLink(stream: StreamRef, kind: StreamKind, id: string | undefined): { value?: string | null } {
  if (stream.kind !== kind) return id === undefined ? {} : { value: id };
  if (id === stream.id) return {};
  return { value: id ?? null };
}

/** The id member a stored event of `stream` kept for `kind`'s streams, as the envelope says it. */
function linkOf(stream: StreamRef, kind: StreamKind, kept: string | null | undefined): string | undefined {
  if (kept === null) return undefined;
  return kept === undefined && stream.kind === kind ? stream.id : kept;
}

/** The compact form of an event a producer recorded on `stream` (see {@link StoredEvent}). */
export function storedEvent(stream: StreamRef, producer: ProducerIdentity, event: RecordedEvent): StoredEvent {
  const { recordedAt, observedAt, causation, automationId, occurrenceId, runId, attemptId, kind, summary } = event;
  const plain = producer.component === ENGINE_COMPONENT && Object.keys(producer).length === 2;
  const occurrence = keptLink(stream, 'occurrence', occurrenceId);
  const run = keptLink(stream, 'run', runId);
  const derived = transitionSummary(kind, event, event.payload);
  return {
    recordedAt,
    ...(observedAt === undefined || observedAt === recordedAt ? {} : { observedAt }),
    // A copy of the producer: the stored event is handed to the store, which may freeze it in place.
    ...(plain ? { by: producer.instanceId } : { producer: { ...producer } }),
    ...(causation === undefined ? {} : { causation }),
    ...(automationId === undefined ? {} : { automationId }),
    ...('value' in occurrence ? { occurrenceId: occurrence.value } : {}),
    ...('value' in run ? { runId: run.value } : {}),
    ...(attemptId === undefined ? {} : { attemptId }),
    kind,
    ...(summary === derived ? {} : { summary }),
    payload: event.payload,
  };
}

/** The contract's envelope of a changefeed entry of the store `storeId`, whichever form the store kept it in. */
export function envelopeOf(entry: LogEntry, storeId: string): EventEnvelope {
  const data = entry.data as StoredEvent | EventEnvelope;
  if (isWholeEnvelope(data)) return data;
  const { recordedAt, observedAt, by, producer, causation, automationId, attemptId, kind, payload } = data;
  const stream = streamRefOf(entry.stream);
  const occurrenceId = linkOf(stream, 'occurrence', data.occurrenceId);
  const runId = linkOf(stream, 'run', data.runId);
  const summary = data.summary ?? transitionSummary(kind, { occurrenceId, runId, attemptId }, payload) ?? '';
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
    kind,
    summary,
    payload,
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
