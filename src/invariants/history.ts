import type { EventEnvelope } from '../changefeed/event-envelope.js';
import type { Store, StoredRecord } from '../store/store.js';
import type { RuntimeLog } from './probe-runtime.js';

const KINDS = ['definition', 'definition-revision', 'occurrence', 'run', 'attempt', 'receipt', 'adoption', 'quarantine', 'outbox', 'fence-run'] as const;

/** Everything the store holds and the runtime saw, at one instant, for invariant checks. */
export interface History {
  at: string;
  records: Record<(typeof KINDS)[number], Map<string, StoredRecord<Record<string, unknown>>>>;
  feed: EventEnvelope[];
  /** Stream key (`kind/id`) of each feed entry, parallel to `feed`. */
  streams: string[];
  sequences: number[];
  runtime: RuntimeLog;
  /** Full engine passes: their instant and how long the changefeed was when each began (orders them among commits). */
  passes: Array<{ at: string; feedLength: number }>;
}

export async function captureHistory(store: Store, runtime: RuntimeLog, at: string, passes: History['passes']): Promise<History> {
  return store.read(async (reader) => {
    const records = {} as History['records'];
    for (const kind of KINDS) records[kind] = new Map((await reader.list<Record<string, unknown>>(kind)).map((r) => [r.id, r]));
    const entries = await reader.readFeed<EventEnvelope>();
    return {
      at,
      records,
      feed: entries.map((e) => e.data),
      streams: entries.map((e) => e.stream),
      sequences: entries.map((e) => e.sequence),
      runtime: { launches: [...runtime.launches], cancels: [...runtime.cancels], exits: new Map(runtime.exits), lost: new Set(runtime.lost) },
      passes: [...passes],
    };
  });
}
