import { liveWorkRow } from '../live-work.js';
import { LIVE_WORK_COLUMNS } from '../record-columns.js';
import type { LiveWork } from '../store.js';
import type { Connection } from './connection.js';

/** A record row as the records table holds it. */
export type RecordRow = { kind: string; id: string; version: number; terminal: boolean; data: unknown };

/** The live-work summary of an occurrence row, as {@link liveWorkQuery} selects it. */
const LIVE_SUMMARY = `json_build_object(${Object.entries(LIVE_WORK_COLUMNS)
  .map(([field, column]) => `'${field}', ${column}`)
  .join(', ')})`;

/**
 * What a step is about to read, in one statement: each wanted record by its primary key (kind, id), as one `get`
 * would; the newest sequence of each wanted stream from the UNIQUE (stream, sequence) index; when `$4` asks, this
 * transaction's id (which assigns it one: only a transaction that will append asks); and the live occurrences of
 * the automation `$5` (none when null), as `liveWork('occurrence', { automationId })` would answer them. A row is
 * one of the four by which of its columns are set. A record comes with its row's `xmin`, which the store remembers
 * (own-commits.ts).
 *
 * The statement runs on a generic plan (see postgres-store.ts): the automation is a scalar so that the live part's
 * index condition names it. With an array there, the generic plan scanned every live occurrence's index entries,
 * and every dead one an update left behind (a bitmap scan never marks them dead), so the read grew with the store's
 * history until the next vacuum. (A stream's head read by a backward index probe per stream instead of the
 * aggregate left the changefeed's replays slower afterwards in four of four alternating pairs: kept as it is.)
 */
const PREFETCH_SQL = `
  SELECT r.kind, r.id, r.version, r.terminal, r.data, NULL::text AS stream, NULL::bigint AS newest, NULL::json AS live,
      r.xmin::text AS xmin
    FROM {s}.records AS r
    JOIN unnest($1::text[], $2::text[]) AS wanted(kind, id) ON r.kind = wanted.kind AND r.id = wanted.id
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, stream, MAX(sequence), NULL, NULL FROM {s}.log WHERE stream = ANY($3::text[])
    GROUP BY stream
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, NULL, pg_current_xact_id()::text::bigint, NULL, NULL WHERE $4::bool
  UNION ALL
  SELECT NULL, id, NULL, NULL, NULL, NULL, NULL, ${LIVE_SUMMARY}, NULL FROM {s}.records
    WHERE kind = 'occurrence' AND NOT terminal AND automation_id = $5::text`;

/** A record row as a prefetch selects it: with its row's `xmin` (see own-commits.ts). */
export type PrefetchedRecord = RecordRow & { xmin: string };

type PrefetchRow = Omit<PrefetchedRecord, 'kind'> & {
  kind: string | null;
  stream: string | null;
  newest: number | null;
  live: Record<string, unknown> | null;
};

/** What one prefetch found: the records present, the next sequence of each stream asked for, the transaction id. */
export interface Prefetched {
  readonly records: PrefetchedRecord[];
  /** The sequence the next append to each stream gets (0 for an empty one), as `head` answers it. */
  readonly heads: Map<string, number>;
  readonly xid?: bigint;
  /** The live occurrences of the automation asked for, ordered by id (none when none was asked for). */
  readonly live: LiveWork[];
}

export async function prefetchRows(
  db: Connection,
  keys: ReadonlyArray<readonly [kind: string, id: string]>,
  streams: readonly string[],
  withXid: boolean,
  liveOf?: string,
): Promise<Prefetched> {
  // Often a step's first statement: then its transaction's BEGIN travels with it (see Connection.rowsOpening).
  const rows = await db.rowsOpening<PrefetchRow>(PREFETCH_SQL, [
    keys.map(([kind]) => kind),
    keys.map(([, id]) => id),
    [...streams],
    withXid,
    liveOf ?? null,
  ]);
  const heads = new Map(streams.map((stream) => [stream, 0]));
  const records: PrefetchedRecord[] = [];
  const live: LiveWork[] = [];
  let xid: bigint | undefined;
  for (const row of rows) {
    if (row.live !== null) live.push(liveWorkRow(row.id, (field) => row.live![field]));
    else if (row.kind !== null) records.push(row as PrefetchedRecord);
    else if (row.stream !== null) heads.set(row.stream, row.newest! + 1);
    else xid = BigInt(row.newest!);
  }
  live.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { records, heads, live, ...(xid === undefined ? {} : { xid }) };
}
