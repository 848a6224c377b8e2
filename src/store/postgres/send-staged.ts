import { RECORD_COLUMNS, recordColumns } from '../record-columns.js';
import type { StagedAppend, StagedWrite } from './transaction-records.js';

/** What sending needs of a connection (the transaction's `Connection`). */
interface Connection {
  rows<R extends Record<string, unknown>>(text: string, values: unknown[]): Promise<R[]>;
}

// One statement per kind of write for a whole job, whatever its size: the rows travel as arrays. ON CONFLICT DO
// NOTHING: a taken id, a uniqueness rule or a taken stream sequence refuses its row without aborting the
// transaction, and the rows that came back say which were refused.
// The record's columns (record-columns.ts) travel as arrays of their own after the five the record has.
const COLUMNS = RECORD_COLUMNS.join(', ');
const COLUMN_ARRAYS = RECORD_COLUMNS.map((_, i) => `$${i + 6}::text[]`).join(', ');
const INSERT_RECORDS_SQL =
  `INSERT INTO {s}.records (kind, id, version, terminal, data, ${COLUMNS}) ` +
  `SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bool[], $5::json[], ${COLUMN_ARRAYS}) ` +
  'ON CONFLICT DO NOTHING RETURNING kind, id';
const STORED = `$${RECORD_COLUMNS.length + 6}::int[]`;
const UPDATE_RECORDS_SQL =
  'UPDATE {s}.records AS r SET version = u.version, terminal = u.terminal, data = u.data, ' +
  `${RECORD_COLUMNS.map((c) => `${c} = u.${c}`).join(', ')} ` +
  `FROM unnest($1::text[], $2::text[], $3::int[], $4::bool[], $5::json[], ${COLUMN_ARRAYS}, ${STORED}) ` +
  `AS u (kind, id, version, terminal, data, ${COLUMNS}, stored) ` +
  'WHERE r.kind = u.kind AND r.id = u.id AND r.version = u.stored AND NOT r.terminal RETURNING r.kind, r.id';
const INSERT_LOG_SQL =
  'INSERT INTO {s}.log (position, stream, sequence, data) ' +
  'SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::json[]) ON CONFLICT DO NOTHING RETURNING position';

async function sendRecords(db: Connection, sql: string, writes: StagedWrite[]): Promise<StagedWrite | undefined> {
  if (writes.length === 0) return undefined;
  const columns: unknown[][] = [
    writes.map((w) => w.record.kind),
    writes.map((w) => w.record.id),
    writes.map((w) => w.record.version),
    writes.map((w) => w.record.terminal),
    writes.map((w) => w.text),
  ];
  const values = writes.map((w) => recordColumns(w.record));
  columns.push(...RECORD_COLUMNS.map((_, i) => values.map((v) => v[i])));
  if (sql === UPDATE_RECORDS_SQL) columns.push(writes.map((w) => w.stored));
  const rows = await db.rows<{ kind: string; id: string }>(sql, columns);
  if (rows.length === writes.length) return undefined;
  const written = new Set(rows.map((row) => `${row.kind}\u0000${row.id}`));
  return writes.find((w) => !written.has(`${w.record.kind}\u0000${w.record.id}`));
}

/**
 * Sends a job's staged record writes: new records in one statement, changed ones in another (each compared with
 * the version its row held before the job). Answers the first write refused, if any.
 */
export async function sendStagedWrites(db: Connection, writes: StagedWrite[]): Promise<StagedWrite | undefined> {
  const inserts = writes.filter((w) => w.stored === null);
  const updates = writes.filter((w) => w.stored !== null);
  return (await sendRecords(db, INSERT_RECORDS_SQL, inserts)) ?? (await sendRecords(db, UPDATE_RECORDS_SQL, updates));
}

/**
 * Sends a job's staged appends in one statement. Answers the first append refused (a sequence another writer
 * took first), if any.
 */
export async function sendStagedAppends(db: Connection, appends: StagedAppend[]): Promise<StagedAppend | undefined> {
  if (appends.length === 0) return undefined;
  const rows = await db.rows<{ position: string }>(INSERT_LOG_SQL, [
    appends.map((a) => String(a.position)),
    appends.map((a) => a.stream),
    appends.map((a) => a.sequence),
    appends.map((a) => a.text),
  ]);
  if (rows.length === appends.length) return undefined;
  const written = new Set(rows.map((row) => Number(row.position)));
  return appends.find((a) => !written.has(a.position));
}
