import type { Connection } from './connection.js';

/** A record row as the records table holds it. */
export type RecordRow = { kind: string; id: string; version: number; terminal: boolean; data: unknown };

/**
 * The rows of many records in one statement: each key probes the primary key (kind, id), as one `get` would.
 * Keys with no row are simply absent from the answer.
 */
const RECORDS_SQL = `
  SELECT r.* FROM {s}.records AS r
  JOIN unnest($1::text[], $2::text[]) AS wanted(kind, id) ON r.kind = wanted.kind AND r.id = wanted.id`;

/** The newest sequence of many streams in one statement, each from the UNIQUE (stream, sequence) index. */
const HEADS_SQL = `
  SELECT stream, MAX(sequence) AS newest FROM {s}.log WHERE stream = ANY($1::text[]) GROUP BY stream`;

export async function recordRows(
  db: Connection,
  keys: ReadonlyArray<readonly [kind: string, id: string]>,
): Promise<RecordRow[]> {
  return db.rows<RecordRow>(RECORDS_SQL, [keys.map(([kind]) => kind), keys.map(([, id]) => id)]);
}

/** The sequence the next append to each stream gets (0 for an empty one), as `head` answers it. */
export async function streamHeads(db: Connection, streams: readonly string[]): Promise<Map<string, number>> {
  const rows = await db.rows<{ stream: string; newest: number }>(HEADS_SQL, [streams]);
  const heads = new Map(streams.map((stream) => [stream, 0]));
  for (const row of rows) heads.set(row.stream, row.newest + 1);
  return heads;
}
