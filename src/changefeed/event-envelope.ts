import { sha256Hex } from '../contract/digest.js';
import type { Digest } from '../contract/digest.js';
import type { SCHEMA_VERSION } from '../contract/vocabulary.js';
import type { StoreReader, StoreTransaction } from '../store/store.js';

export type StreamKind = 'automation' | 'occurrence' | 'run' | 'feed';

export interface StreamRef {
  kind: StreamKind;
  id: string;
}

export type EventKind =
  | 'definition.created'
  | 'definition.revised'
  | 'definition.activated'
  | 'definition.paused'
  | 'definition.disabled'
  | 'definition.invalidated'
  | 'definition.tombstoned'
  | 'definition.imported'
  | 'occurrence.transitioned'
  | 'occurrence.misfire_recorded'
  | 'run.transitioned'
  | 'attempt.transitioned'
  | 'receipt.recorded'
  | 'feed.snapshot'
  // Runtime Authority profile (coven.automations.authority.v1): a dispatch refused, an approval consumed.
  | 'authority.refused'
  | 'approval.consumed';

export interface ProducerIdentity {
  component: string;
  instanceId: string;
  implementationVersion?: string;
}

/** The contract's changefeed event envelope. */
export interface EventEnvelope {
  schemaVersion: typeof SCHEMA_VERSION;
  eventId: string;
  stream: StreamRef;
  sequence: number;
  recordedAt: string;
  observedAt: string;
  producer: ProducerIdentity;
  causation?: { adoptionKey?: string; causeEventId?: string; correlationId?: string };
  automationId?: string;
  occurrenceId?: string;
  runId?: string;
  attemptId?: string;
  kind: EventKind;
  summary: string;
  payload: Record<string, unknown>;
  privacy: {
    classification: 'public' | 'operational' | 'sensitive' | 'restricted';
    retention: { classification: string };
  };
  integrity?: Digest;
}

/** The store stream that holds a changefeed stream's events. */
export function storeStream(stream: StreamRef): string {
  return `${stream.kind}/${stream.id}`;
}

/** {@link storeStream}'s inverse: `occurrence/occ-1` → the stream it names (an id may hold slashes, a kind never). */
export function streamRefOf(key: string): StreamRef {
  const slash = key.indexOf('/');
  if (slash === -1) return { kind: key as StreamKind, id: '' };
  return { kind: key.slice(0, slash) as StreamKind, id: key.slice(slash + 1) };
}

/** What a caller supplies for one event; the changefeed fills in identity, sequence and time. */
export interface NewEvent {
  stream: StreamRef;
  kind: EventKind;
  summary: string;
  payload: Record<string, unknown>;
  automationId?: string;
  occurrenceId?: string;
  runId?: string;
  attemptId?: string;
  adoptionKey?: string;
  correlationId?: string;
  observedAt?: string;
  /**
   * The stream is new (its entity is being created in this transaction): its first entry is sequence 0, so no
   * store needs to look its head up; a store refuses the append if the stream has entries after all.
   */
  newStream?: boolean;
}

export interface ChangefeedContext {
  producer: ProducerIdentity;
  /**
   * Distinguishes this store's events from any other store's, so event ids are globally unique. Holding it means
   * the store's meta record exists ({@link ensureStoreId}), which is where a read of an event takes it from to
   * derive the event's id: events are stored without one.
   */
  storeId: string;
  now: string;
}

/**
 * Event ids are derived, not random: `evt` + the first 32 hex of SHA-256(storeId, stream, sequence). A
 * (stream, sequence) pair is unique within a store and the store id is unique, so ids are unique and
 * replays of the same history reproduce the same ids.
 */
export function eventIdFor(storeId: string, stream: StreamRef, sequence: number): string {
  return `evt${sha256Hex(`${storeId}\u0000${storeStream(stream)}\u0000${sequence}`).slice(0, 32)}`;
}

const STORE_META_KIND = 'meta';
const STORE_META_ID = 'store';

/** The store's identity, created on first use from `newId` and never changed afterwards. */
export async function ensureStoreId(tx: StoreTransaction, newId: () => string): Promise<string> {
  const existing = await tx.get<{ storeId: string }>(STORE_META_KIND, STORE_META_ID);
  if (existing !== undefined) return existing.data.storeId;
  const storeId = newId();
  await tx.put(STORE_META_KIND, STORE_META_ID, { storeId }, { expectedVersion: null, terminal: true });
  return storeId;
}

export async function readStoreId(reader: StoreReader): Promise<string | undefined> {
  return (await reader.get<{ storeId: string }>(STORE_META_KIND, STORE_META_ID))?.data.storeId;
}
