import { storeStream, type EventEnvelope, type StreamRef } from '../changefeed/event-envelope.js';
import { readEventLog } from '../changefeed/stored-event.js';
import { ContractError } from '../contract/errors.js';
import { runIdFor } from '../domain/ids.js';
import { KINDS, occurrenceContext, type OccurrenceRecord } from '../domain/records.js';
import type { LogEntry, StoreReader } from '../store/store.js';

const DEFAULT_LIMIT = 200;

/** The run streams that belong to an occurrence: one per accepted fence generation, or its one derived run id. */
async function runIdsOf(reader: StoreReader, occurrenceId: string): Promise<string[]> {
  const occurrence = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, occurrenceId);
  const ids = new Set<string>();
  if (occurrence !== undefined) {
    for (let g = 1; g <= occurrenceContext(occurrence as OccurrenceRecord).fence.generation; g++) {
      const accepted = await reader.get<{ runId: string }>(KINDS.fenceRun, `${occurrenceId}#${g}`);
      if (accepted !== undefined) ids.add(accepted.data.runId);
    }
  }
  // A compacted occurrence's records are gone but its streams stay: its run has the id derived from it.
  ids.add(runIdFor(occurrenceId));
  return [...ids];
}

/** One line of the timeline: where it was committed, and for a transition what moved from where to where. */
function entryOf(entry: LogEntry<EventEnvelope>): Record<string, unknown> {
  const e = entry.data;
  const p = e.payload;
  return {
    position: entry.position,
    stream: storeStream(e.stream),
    sequence: e.sequence,
    recordedAt: e.recordedAt,
    kind: e.kind,
    summary: e.summary,
    ...(typeof p.entity === 'string' ? { entity: p.entity } : {}),
    ...(typeof p.from === 'string' ? { from: p.from, to: p.to, reason: p.reason } : {}),
    ...(e.attemptId === undefined ? {} : { attemptId: e.attemptId }),
    ...(e.causation?.adoptionKey === undefined ? {} : { adoptionKey: e.causation.adoptionKey }),
  };
}

/**
 * occurrence.history.v1: what happened to an occurrence, oldest first in commit order: its own transitions and
 * those of its runs and attempts, and its receipts, read from their changefeed streams. Retention keeps those
 * streams (behind a snapshot) after it compacts the records, so this still answers for a compacted occurrence.
 *
 * @example
 * ```ts
 * const { entries } = await store.read((r) => occurrenceHistory(r, { occurrenceId: 'occ-1' }));
 * // [{ kind: 'occurrence.transitioned', from: 'none', to: 'planned', ... }, ...]
 * ```
 */
export async function occurrenceHistory(
  reader: StoreReader,
  payload: { occurrenceId: string; limit?: number },
): Promise<Record<string, unknown>> {
  const limit = payload.limit ?? DEFAULT_LIMIT;
  const streams: StreamRef[] = [
    { kind: 'occurrence', id: payload.occurrenceId },
    ...(await runIdsOf(reader, payload.occurrenceId)).map((id) => ({ kind: 'run' as const, id })),
  ];
  const entries: Array<LogEntry<EventEnvelope>> = [];
  for (const stream of streams) entries.push(...(await readEventLog(reader, stream)));
  if (entries.length === 0)
    throw new ContractError('NOT_FOUND', `no occurrence with id ${payload.occurrenceId}`, {
      kind: 'occurrence',
      id: payload.occurrenceId,
    });
  entries.sort((a, b) => a.position - b.position);
  return {
    occurrenceId: payload.occurrenceId,
    entries: entries.slice(0, limit).map(entryOf),
    truncated: entries.length > limit,
  };
}
