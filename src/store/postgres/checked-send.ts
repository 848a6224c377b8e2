import { SLOTS_PER_TRANSACTION, type FeedClock } from './feed-clock.js';
import type { Expected } from './own-commits.js';
import {
  APPEND_ARRAYS,
  COMMITTING_TYPES,
  firstMissing,
  jobValues,
  jobWritesSql,
  N,
  REFUSAL,
  REFUSED,
  type Refusal,
} from './send-staged.js';
import type { TypedValue } from './connection.js';
import type { StagedAppend, StagedWrite } from './transaction-records.js';

/** What sending checked writes needs of a connection. */
interface CommittingConnection {
  executeThenCommit(text: string, values: ReadonlyArray<TypedValue>): Promise<Array<Record<string, unknown>>>;
}

/** Marks the error the statement raises when a row or head the step relied on moved. */
const STALE = 'coven-stale';
const FEED_FULL = 'coven-feed-full';
const MAX_POSITION = Number.MAX_SAFE_INTEGER;

const p = (i: number, type: string) => `$${2 * N + i}::${type}`;

/**
 * A job's writes as SEND_JOB_COMMITTING_SQL (send-staged.ts) sends them, for a step that relied on what the store
 * remembered instead of reading it first: in the same statement (one snapshot) every row it relied on must still
 * be the row with that version and `xmin` (or still absent), and every stream it appends to still at that head, or
 * the statement raises and nothing commits. Its feed positions are its transaction id's, taken here (the step never
 * asked for the id): `$2N+4` holds the appends' slots.
 */
function checkedSql(feed: FeedClock): string {
  const first =
    `(${feed.origin}::bigint + (pg_current_xact_id()::text::bigint - ${feed.baseXid}::bigint) ` +
    `* ${SLOTS_PER_TRANSACTION})`;
  const writes = jobWritesSql(
    `SELECT ${first} + a.slot, a.stream, a.sequence, a.data ` +
      `FROM unnest(${APPEND_ARRAYS}) AS a(slot, stream, sequence, data)`,
  );
  const movedRows =
    `SELECT count(*) FROM unnest(${p(9, 'text[]')}, ${p(10, 'text[]')}, ${p(11, 'int[]')}, ${p(12, 'text[]')}) ` +
    'AS w(kind, id, version, xmin) LEFT JOIN {s}.records AS r ON r.kind = w.kind AND r.id = w.id ' +
    'WHERE CASE WHEN w.version IS NULL THEN r.kind IS NOT NULL ' +
    'ELSE r.kind IS NULL OR r.version <> w.version OR r.xmin::text <> w.xmin END';
  const movedHeads =
    `SELECT count(*) FROM unnest(${p(13, 'text[]')}, ${p(14, 'bigint[]')}) AS h(stream, next) ` +
    'WHERE COALESCE((SELECT max(l.sequence) + 1 FROM {s}.log AS l WHERE l.stream = h.stream), 0) <> h.next';
  return (
    writes +
    // Each raising cast names something computed, or the server would fold it, and fail, when preparing.
    `SELECT CASE WHEN (${movedRows}) > 0 OR (${movedHeads}) > 0 ` +
    `THEN ('${STALE} ' || (${movedRows}) || ' ' || (${movedHeads}))::bigint ` +
    `WHEN (SELECT count(*) FROM inserted) <> ${p(2, 'int')} ` +
    `THEN ('${REFUSED} insert ' || ${firstMissing('$1::text[], $2::text[]', 'inserted')})::bigint ` +
    `WHEN (SELECT count(*) FROM updated) <> ${p(3, 'int')} ` +
    `THEN ('${REFUSED} update ' || ${firstMissing(`$${N + 1}::text[], $${N + 2}::text[]`, 'updated')})::bigint ` +
    `WHEN (SELECT count(*) FROM appended) <> ${p(8, 'int')} ` +
    `THEN ('${REFUSED} append ' || (SELECT min(n) FROM unnest(${p(4, 'bigint[]')}) WITH ORDINALITY AS a(s, n) ` +
    `WHERE ${first} + s NOT IN (SELECT position FROM appended)))::bigint ` +
    `WHEN (SELECT max(position) FROM appended) > ${MAX_POSITION} ` +
    `THEN ('${FEED_FULL} ' || (SELECT max(position) FROM appended))::bigint ` +
    'ELSE pg_current_xact_id()::text::bigint END AS xid'
  );
}

const statements = new WeakMap<FeedClock, string>();

// Parameter types in order: SEND_JOB_COMMITTING_SQL's, then what the step relied on (records, then heads).
const TYPES = [...COMMITTING_TYPES, 'text[]', 'text[]', 'int[]', 'text[]', 'text[]', 'bigint[]'];

/** Why a checked send did not commit: what the step relied on moved, or a write or append was refused. */
export type CheckedOutcome = { readonly xid: bigint } | 'stale' | 'feed-full' | Refusal;

/**
 * Sends a job's staged writes and appends (each append's `position` its slot in the transaction) with the check of
 * what the job relied on, and commits, in one message. Answers the transaction id once committed; otherwise
 * the transaction is rolled back and the answer says why.
 */
export async function sendCheckedThenCommit(
  db: CommittingConnection,
  feed: FeedClock,
  writes: StagedWrite[],
  appends: StagedAppend[],
  expected: Expected,
): Promise<CheckedOutcome> {
  const inserts = writes.filter((w) => w.stored === null);
  const updates = writes.filter((w) => w.stored !== null);
  const slotted = appends.map((append) => ({ ...append, position: append.slot }));
  const values = [
    ...jobValues(inserts, updates, slotted),
    appends.length,
    expected.records.map((r) => r.kind),
    expected.records.map((r) => r.id),
    expected.records.map((r) => r.version),
    expected.records.map((r) => r.xmin),
    expected.heads.map((h) => h.stream),
    expected.heads.map((h) => h.next),
  ];
  // A NUL cannot travel in a simple query: the step runs again the ordinary way, which sends it as a parameter.
  if (values.some((value) => Array.isArray(value) && value.some((v) => typeof v === 'string' && v.includes('\0'))))
    return 'stale';
  let sql = statements.get(feed);
  if (sql === undefined) statements.set(feed, (sql = checkedSql(feed)));
  try {
    const [row] = await db.executeThenCommit(
      sql,
      values.map((value, i) => [value, TYPES[i]!] as const),
    );
    return { xid: BigInt(row!.xid as string | number) };
  } catch (error) {
    if ((error as { code?: string }).code !== '22P02') throw error;
    const message = (error as Error).message;
    if (message.includes(`"${STALE} `)) return 'stale';
    if (message.includes(`"${FEED_FULL} `)) return 'feed-full';
    const refusal = REFUSAL.exec(message);
    if (refusal === null) throw error;
    const at = Number(refusal[2]) - 1;
    if (refusal[1] === 'append') return { lost: appends[at]! };
    return { refused: (refusal[1] === 'insert' ? inserts : updates)[at]! };
  }
}
