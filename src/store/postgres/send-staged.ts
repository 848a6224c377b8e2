import { RECORD_COLUMNS, recordColumns } from '../record-columns.js';
import type { StagedAppend, StagedWrite } from './transaction-records.js';
import type { TypedValue } from './connection.js';

/** What sending needs of a connection (the transaction's `Connection`). */
interface Connection {
  rows<R extends Record<string, unknown>>(text: string, values: unknown[]): Promise<R[]>;
}
/** What sending with the COMMIT needs of a connection. */
interface CommittingConnection {
  executeThenCommit(text: string, values: ReadonlyArray<TypedValue>): Promise<unknown>;
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

/** The arrays of one statement's record rows: the five every record has, then its columns. */
function recordArrays(writes: StagedWrite[]): unknown[][] {
  const columns: unknown[][] = [
    writes.map((w) => w.record.kind),
    writes.map((w) => w.record.id),
    writes.map((w) => w.record.version),
    writes.map((w) => w.record.terminal),
    writes.map((w) => w.text),
  ];
  const values = writes.map((w) => recordColumns(w.record));
  columns.push(...RECORD_COLUMNS.map((_, i) => values.map((v) => v[i])));
  return columns;
}

const appendArrays = (appends: StagedAppend[]): unknown[][] => [
  appends.map((a) => String(a.position)),
  appends.map((a) => a.stream),
  appends.map((a) => a.sequence),
  appends.map((a) => a.text),
];

/** The first write `rows` (kind and id of each written) leaves out, if any. */
function firstRefused(writes: StagedWrite[], rows: ReadonlyArray<{ kind: string | null; id: string | null }>) {
  if (rows.length === writes.length) return undefined;
  const written = new Set(rows.map((row) => `${row.kind}\u0000${row.id}`));
  return writes.find((w) => !written.has(`${w.record.kind}\u0000${w.record.id}`));
}

/** The first append `positions` (those written) leaves out, if any. */
function firstLost(appends: StagedAppend[], positions: readonly number[]): StagedAppend | undefined {
  if (positions.length === appends.length) return undefined;
  const written = new Set(positions);
  return appends.find((a) => !written.has(a.position));
}

async function sendRecords(db: Connection, sql: string, writes: StagedWrite[]): Promise<StagedWrite | undefined> {
  if (writes.length === 0) return undefined;
  const columns = recordArrays(writes);
  if (sql === UPDATE_RECORDS_SQL) columns.push(writes.map((w) => w.stored));
  return firstRefused(writes, await db.rows<{ kind: string; id: string }>(sql, columns));
}

/**
 * Sends a job's staged appends in one statement. Answers the first append refused (a sequence another writer
 * took first), if any.
 */
async function sendStagedAppends(db: Connection, appends: StagedAppend[]): Promise<StagedAppend | undefined> {
  if (appends.length === 0) return undefined;
  const rows = await db.rows<{ position: string }>(INSERT_LOG_SQL, appendArrays(appends));
  return firstLost(
    appends,
    rows.map((row) => Number(row.position)),
  );
}

// A job's inserts, updates and appends in one statement, one round trip instead of three. Each part runs only if
// the one before wrote every row (the conditions read the earlier parts' RETURNING, which also orders them): a
// refused insert leaves the updates and appends unsent and a refused update the appends, as sending them one
// statement after another and stopping at the first refusal does.
export const N = RECORD_COLUMNS.length + 5;
const arrays = (from: number, types: readonly string[]) => types.map((t, i) => `$${from + i}::${t}[]`).join(', ');
export const RECORD_TYPES = ['text', 'text', 'int', 'bool', 'json', ...RECORD_COLUMNS.map(() => 'text')];
const INSERTS_WANTED = `$${2 * N + 2}`;
const UPDATES_WANTED = `$${2 * N + 3}`;
/**
 * A job's three writes as CTEs `inserted`, `updated` and `appended`; `appendRows` selects the appends' rows
 * (position, stream, sequence, data) from the parameters that follow the updates'.
 */
export const jobWritesSql = (appendRows: string) =>
  `WITH inserted AS (INSERT INTO {s}.records (kind, id, version, terminal, data, ${COLUMNS}) ` +
  `SELECT * FROM unnest(${arrays(1, RECORD_TYPES)}) ON CONFLICT DO NOTHING RETURNING kind, id), ` +
  'updated AS (UPDATE {s}.records AS r SET version = u.version, terminal = u.terminal, data = u.data, ' +
  `${RECORD_COLUMNS.map((c) => `${c} = u.${c}`).join(', ')} ` +
  `FROM unnest(${arrays(N + 1, [...RECORD_TYPES, 'int'])}) ` +
  `AS u (kind, id, version, terminal, data, ${COLUMNS}, stored) ` +
  'WHERE r.kind = u.kind AND r.id = u.id AND r.version = u.stored AND NOT r.terminal ' +
  `AND (SELECT count(*) FROM inserted) = ${INSERTS_WANTED} RETURNING r.kind, r.id), ` +
  `appended AS (INSERT INTO {s}.log (position, stream, sequence, data) ${appendRows} ` +
  `WHERE (SELECT count(*) FROM inserted) = ${INSERTS_WANTED} AND (SELECT count(*) FROM updated) = ${UPDATES_WANTED} ` +
  'ON CONFLICT DO NOTHING RETURNING position) ';
/** The appends' parameters: positions (or slots), streams, sequences, data. */
export const APPEND_ARRAYS = arrays(2 * N + 4, ['bigint', 'text', 'bigint', 'json']);
const SEND_JOB_WRITES = jobWritesSql(`SELECT * FROM unnest(${APPEND_ARRAYS})`);
const SEND_JOB_SQL =
  SEND_JOB_WRITES +
  'SELECT kind, id, NULL::bigint AS position FROM inserted UNION ALL SELECT kind, id, NULL FROM updated ' +
  'UNION ALL SELECT NULL, NULL, position FROM appended';

/** Marks the error {@link SEND_JOB_COMMITTING_SQL} raises for a refused write, ahead of what was refused. */
export const REFUSED = 'coven-refused';
/** The text the server quotes in that error: `invalid input syntax for type integer: "coven-refused update 2"`. */
export const REFUSAL = new RegExp(`"${REFUSED} (insert|update|append) (\\d+)"`);
const APPENDS_WANTED = `$${2 * N + 8}`;
export const firstMissing = (arrays: string, returned: string) =>
  `(SELECT min(n) FROM unnest(${arrays}) WITH ORDINALITY AS w(kind, id, n) ` +
  `WHERE (kind, id) NOT IN (SELECT kind, id FROM ${returned}))`;
// The job's writes as SEND_JOB_SQL sends them, for a message that commits right after: a refusal must then abort
// the transaction instead of coming back as missing rows. It does so by casting to int a text that names the
// first refused row (an insert, update or append, by its 1-based place in its arrays), which the server evaluates
// only for a refusal, so the error says exactly what SEND_JOB_SQL's rows would have said.
const SEND_JOB_COMMITTING_SQL =
  SEND_JOB_WRITES +
  `SELECT CASE WHEN (SELECT count(*) FROM inserted) <> ${INSERTS_WANTED} ` +
  `THEN ('${REFUSED} insert ' || ${firstMissing('$1::text[], $2::text[]', 'inserted')})::int ` +
  `WHEN (SELECT count(*) FROM updated) <> ${UPDATES_WANTED} ` +
  `THEN ('${REFUSED} update ' || ${firstMissing(`$${N + 1}::text[], $${N + 2}::text[]`, 'updated')})::int ` +
  `WHEN (SELECT count(*) FROM appended) <> ${APPENDS_WANTED} ` +
  `THEN ('${REFUSED} append ' || (SELECT min(n) FROM unnest($${2 * N + 4}::bigint[]) WITH ORDINALITY AS a(p, n) ` +
  'WHERE p NOT IN (SELECT position FROM appended)))::int ELSE 0 END';
// The SQL type of each of its values, in order: what Connection.executeThenCommit writes them in as.
const SCALARS = new Set([2 * N + 1, 2 * N + 2, 2 * N + 7]);
export const COMMITTING_TYPES = [
  ...RECORD_TYPES,
  ...RECORD_TYPES,
  'int',
  'int',
  'int',
  'bigint',
  'text',
  'bigint',
  'json',
  'int',
].map((type, i) => (SCALARS.has(i) ? type : `${type}[]`));

/** The values of {@link SEND_JOB_SQL}, in its parameters' order. */
export const jobValues = (inserts: StagedWrite[], updates: StagedWrite[], appends: StagedAppend[]): unknown[] => [
  ...recordArrays(inserts),
  ...recordArrays(updates),
  updates.map((w) => w.stored),
  inserts.length,
  updates.length,
  ...appendArrays(appends),
];

/**
 * Sends a job's staged writes and appends and commits the transaction, in one message. Answers undefined once
 * committed; when a write was refused, the transaction is rolled back and the answer says which, as
 * {@link sendStaged}'s would; 'unsent' when a value cannot travel as a literal (nothing was sent). Any other error
 * is thrown (the transaction rolled back).
 */
export async function sendStagedThenCommit(
  db: CommittingConnection,
  writes: StagedWrite[],
  appends: StagedAppend[],
): Promise<Refusal | undefined | 'unsent'> {
  const inserts = writes.filter((w) => w.stored === null);
  const updates = writes.filter((w) => w.stored !== null);
  const values = [...jobValues(inserts, updates, appends), appends.length];
  // A NUL ends a simple query's text: such a value (which no text column can hold anyway) goes as a parameter,
  // where the server refuses it as it always did.
  if (values.some((value) => Array.isArray(value) && value.some((v) => typeof v === 'string' && v.includes('\0'))))
    return 'unsent';
  try {
    await db.executeThenCommit(
      SEND_JOB_COMMITTING_SQL,
      values.map((value, i) => [value, COMMITTING_TYPES[i]!] as const),
    );
    return undefined;
  } catch (error) {
    const refusal = (error as { code?: string }).code === '22P02' ? REFUSAL.exec((error as Error).message) : null;
    if (refusal === null) throw error;
    const at = Number(refusal[2]) - 1;
    if (refusal[1] === 'append') return { lost: appends[at]! };
    return { refused: (refusal[1] === 'insert' ? inserts : updates)[at]! };
  }
}

/** What sending a job found refused: a record write, or else an append (a stream sequence another took first). */
export interface Refusals {
  readonly refused?: StagedWrite;
  readonly lost?: StagedAppend;
}
/** One refusal, as {@link sendStagedThenCommit} reports it. */
export type Refusal = { readonly refused: StagedWrite } | { readonly lost: StagedAppend };

/**
 * Sends a job's staged record writes and appends: new records, changed ones (each compared with the version its
 * row held before the job) and the appends, in one statement when more than one of them has rows. Answers what was
 * refused, if anything; past a refused record write nothing later was sent.
 */
export async function sendStaged(db: Connection, writes: StagedWrite[], appends: StagedAppend[]): Promise<Refusals> {
  const inserts = writes.filter((w) => w.stored === null);
  const updates = writes.filter((w) => w.stored !== null);
  const parts = [inserts, updates, appends].filter((part) => part.length > 0).length;
  if (parts <= 1) {
    const refused =
      (await sendRecords(db, INSERT_RECORDS_SQL, inserts)) ?? (await sendRecords(db, UPDATE_RECORDS_SQL, updates));
    return refused !== undefined ? { refused } : { lost: await sendStagedAppends(db, appends) };
  }
  const rows = await db.rows<{ kind: string | null; id: string | null; position: number | null }>(
    SEND_JOB_SQL,
    jobValues(inserts, updates, appends),
  );
  const refused = firstRefused(
    [...inserts, ...updates],
    rows.filter((row) => row.position === null),
  );
  if (refused !== undefined) return { refused };
  return {
    lost: firstLost(
      appends,
      rows.flatMap((row) => (row.position === null ? [] : [row.position])),
    ),
  };
}
