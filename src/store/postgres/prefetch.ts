import type { Connection } from './connection.js';

/** A record row as the records table holds it. */
export type RecordRow = { kind: string; id: string; version: number; terminal: boolean; data: unknown };

/**
 * What a step is about to read, in one statement: each wanted record by its primary key (kind, id), as one `get`
 * would; the newest sequence of each wanted stream from the UNIQUE (stream, sequence) index; and, when `$4` asks,
 * this transaction's id (which assigns it one: only a transaction that will append asks). A row is one of the three
 * by which of its columns are set.
 */
const prefetchSql = (kinds: string, ids: string, streams: string, withXid: string, schema = '{s}') => `
  SELECT r.kind, r.id, r.version, r.terminal, r.data, NULL::text AS stream, NULL::bigint AS newest
    FROM ${schema}.records AS r
    JOIN unnest(${kinds}::text[], ${ids}::text[]) AS wanted(kind, id) ON r.kind = wanted.kind AND r.id = wanted.id
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, stream, MAX(sequence) FROM ${schema}.log WHERE stream = ANY(${streams}::text[])
    GROUP BY stream
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, NULL, pg_current_xact_id()::text::bigint WHERE ${withXid}::bool`;
const PREFETCH_SQL = prefetchSql('$1', '$2', '$3', '$4');

/** A text array written in as a literal: each element quoted by the driver's own literal escaping. */
const arrayLiteral = (values: readonly string[], literal: (value: string) => string) =>
  `ARRAY[${values.map(literal).join(', ')}]`;

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
  const kinds = keys.map(([kind]) => kind);
  const ids = keys.map(([, id]) => id);
  // Often a step's first statement: then its transaction's BEGIN travels with it, the values written in.
  const rows = await db.rowsOpening<PrefetchRow>(PREFETCH_SQL, [kinds, ids, streams, withXid], (literal, schema) =>
    prefetchSql(
      arrayLiteral(kinds, literal),
      arrayLiteral(ids, literal),
      arrayLiteral(streams, literal),
      String(withXid),
      schema,
    ),
  );
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
