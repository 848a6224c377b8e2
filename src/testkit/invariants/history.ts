import type { EventEnvelope } from '../../changefeed/event-envelope.js';
import { readEventFeed } from '../../changefeed/stored-event.js';
import type { Store, StoredRecord } from '../../store/store.js';
import type { RuntimeLog } from './probe-runtime.js';

const KINDS = [
  'definition',
  'definition-revision',
  'occurrence',
  'run',
  'attempt',
  'receipt',
  'adoption',
  'quarantine',
  'outbox',
  'run-hold',
  'delivery',
  'fence-run',
  'occurrence-key',
] as const;

/** What retention removed: the entities whose streams now hold only a `retention_compaction` snapshot. */
export interface Compacted {
  occurrences: Set<string>;
  runs: Set<string>;
  attempts: Set<string>;
  /** The snapshot events themselves (not in `feed`), for the checks of compaction. */
  snapshots: EventEnvelope[];
}

/**
 * Everything the store holds and the runtime saw, at one instant, for invariant checks. With retention, the
 * history is the retained one: compacted entities' snapshots are set apart in `compacted`, and the runtime's
 * log of their sessions is left out, so every check reads the same world the store still describes.
 */
export interface History {
  at: string;
  records: Record<(typeof KINDS)[number], Map<string, StoredRecord<Record<string, unknown>>>>;
  feed: EventEnvelope[];
  /** Global position of each feed entry, parallel to `feed` (positions have gaps once retention trimmed). */
  positions: number[];
  /** Stream key (`kind/id`) of each feed entry, parallel to `feed`. */
  streams: string[];
  sequences: number[];
  runtime: RuntimeLog;
  /** Full engine passes: their instant and the feed position after the last commit before each began. */
  passes: PassMark[];
  compacted: Compacted;
}

/**
 * One full engine pass. `planGraceMs`: how long a due slot may wait for the engine whose share it is when engines
 * share a store (PLAN_STEAL_AFTER_MS): such a pass must have planned every slot due that long before it began,
 * its own share's at once (which slots are whose the history does not say).
 */
export interface PassMark {
  at: string;
  feedEnd: number;
  planGraceMs: number;
}

const isCompaction = (e: EventEnvelope) => e.kind === 'feed.snapshot' && e.payload.reason === 'retention_compaction';

/**
 * The store's records and retained feed, with the runtime's log, as one history for the invariant checks.
 * Capture it when no engine is committing to the store: on PostgreSQL the feed is served below the visibility
 * horizon, so beside a commit in flight the records can be ahead of their streams' events.
 */
export async function captureHistory(
  store: Store,
  runtime: RuntimeLog,
  at: string,
  passes: History['passes'],
): Promise<History> {
  return store.read(async (reader) => {
    const records = {} as History['records'];
    for (const kind of KINDS)
      records[kind] = new Map((await reader.list<Record<string, unknown>>(kind)).map((r) => [r.id, r]));
    const entries = await readEventFeed(reader);
    const compacted: Compacted = { occurrences: new Set(), runs: new Set(), attempts: new Set(), snapshots: [] };
    for (const { data: e } of entries) {
      if (!isCompaction(e)) continue;
      compacted.snapshots.push(e);
      if (e.stream.kind === 'occurrence') compacted.occurrences.add(e.stream.id);
      if (e.stream.kind === 'run') {
        compacted.runs.add(e.stream.id);
        const state = e.payload.state as { run?: { attempts?: Array<{ attemptId: string }> } };
        for (const a of state.run?.attempts ?? []) compacted.attempts.add(a.attemptId);
      }
    }
    const retained = entries.filter(
      (e) => !(e.data.stream.kind === 'occurrence' ? compacted.occurrences : compacted.runs).has(e.data.stream.id),
    );
    const launches = runtime.launches.filter((l) => !compacted.attempts.has(l.attemptId));
    const forgotten = new Set(
      runtime.launches
        .filter((l) => compacted.attempts.has(l.attemptId) && l.sessionId !== undefined)
        .map((l) => l.sessionId!),
    );
    return {
      at,
      records,
      feed: retained.map((e) => e.data),
      positions: retained.map((e) => e.position),
      streams: retained.map((e) => e.stream),
      sequences: retained.map((e) => e.sequence),
      runtime: {
        launches,
        cancels: runtime.cancels.filter((c) => !forgotten.has(c.sessionId)),
        exits: new Map([...runtime.exits].filter(([session]) => !forgotten.has(session))),
        lost: new Set([...runtime.lost].filter((session) => !forgotten.has(session))),
      },
      passes: [...passes],
      compacted,
    };
  });
}
