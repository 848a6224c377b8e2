import type { StreamRef } from './event-envelope.js';
import { readEventLog } from './stored-event.js';
import type { StoreReader } from '../store/store.js';

/**
 * What retention left of an occurrence or run: its snapshot's final state and when it was compacted, or
 * undefined when the entity was never there (or is still there). Lets a NOT_FOUND say why.
 */
export async function compactedEntity(
  reader: StoreReader,
  stream: StreamRef,
): Promise<{ compactedAt: string; finalState: Record<string, unknown> } | undefined> {
  const first = (await readEventLog(reader, stream, { limit: 1 }))[0]?.data;
  if (first?.kind !== 'feed.snapshot' || first.payload.reason !== 'retention_compaction') return undefined;
  return { compactedAt: first.recordedAt, finalState: first.payload.state as Record<string, unknown> };
}
