import type { Connection } from './connection.js';

/** A record row as the records table holds it. */
export type RecordRow = { kind: string; id: string; version: number; terminal: boolean; data: unknown };

/**
 * What a step is about to read, in one statement: each wanted record by its primary key (kind, id), as one `get`
 * would; the newest sequence of each wanted stream from the UNIQUE (stream, sequence) index; and, when `$4` asks,
 * this transaction's id (which assigns it one: only a transaction that will append asks). A row is one of the three
 * by which of its columns are set.
 */
const PREFETCH_SQL = `
  SELECT r.kind, r.id, r.version, r.terminal, r.data, NULL::text AS stream, NULL::bigint AS newest
    FROM {s}.records AS r
    JOIN unnest($1::text[], $2::text[]) AS wanted(kind, id) ON r.kind = wanted.kind AND r.id = wanted.id
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, stream, MAX(sequence) FROM {s}.log WHERE stream = ANY($3::text[]) GROUP BY stream
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, NULL, pg_current_xact_id()::text::bigint WHERE $4::bool`;

type PrefetchRow = Omit<RecordRow, 'kind'> & { kind: string | null; stream: string | null; newest: number | null };

/** What one prefetch found: the records present, the next sequence of each stream asked for, the transaction id. */
export interface Prefetched {
  readonly records: RecordRow[];
  /** The sequence the next append to each stream gets (0 for an empty one), as `head` answers it. */
  readonly heads: Map<string, number>;
  readonly xid?: bigint;
}

export async function prefetchRows(
  db: Connection,
  keys: ReadonlyArray<readonly [kind: string, id: string]>,
  streams: readonly string[],
  withXid: boolean,
): Promise<Prefetched> {
  // Often a step's first statement: then its transaction's BEGIN travels with it (see Connection.rowsOpening).
  const rows = await db.rowsOpening<PrefetchRow>(PREFETCH_SQL, [
    keys.map(([kind]) => kind),
    keys.map(([, id]) => id),
    [...streams],
    withXid,
  ]);
  const heads = new Map(streams.map((stream) => [stream, 0]));
  const records: RecordRow[] = [];
  let xid: bigint | undefined;
  for (const row of rows) {
    if (row.kind !== null) records.push(row as RecordRow);
    else if (row.stream !== null) heads.set(row.stream, row.newest! + 1);
    else xid = BigInt(row.newest!);
  }
  return { records, heads, ...(xid === undefined ? {} : { xid }) };
}
