import { LIVE_WORK_PATHS, liveWorkColumns, postgresField, RETIRED_INDEX_KINDS } from '../live-work.js';

const AUTOMATION = postgresField(LIVE_WORK_PATHS.automationId);
const STATE = postgresField(LIVE_WORK_PATHS.state);
const SCHEDULED_FOR = postgresField(LIVE_WORK_PATHS.scheduledFor);
const NOT_BEFORE = postgresField(LIVE_WORK_PATHS.notBefore);

/**
 * The occurrences a claim looks for: planned or eligible. Written out, not imported from the machines, for the
 * same reason as the live-work states (a migration's text must not change when code does).
 */
const CLAIMABLE = `kind = 'occurrence' AND NOT terminal AND ${STATE} IN ('planned', 'eligible')`;

/**
 * Schema version 5: what every pass asks is answered by indexes, not by index records rewritten with each
 * transition: the live (not terminal) records of a kind, an automation's, and the claimable occurrences in the
 * order they come due. The index records earlier versions kept are removed.
 */
export const LIVE_WORK_QUERY_MIGRATION = {
  version: 5,
  sql: (s: string) =>
    `CREATE INDEX live_work ON ${s}.records (kind, id) WHERE NOT terminal;
     CREATE INDEX live_work_by_automation ON ${s}.records (kind, ${AUTOMATION}) WHERE NOT terminal;
     CREATE INDEX claimable_occurrences ON ${s}.records (${SCHEDULED_FOR}, id) WHERE ${CLAIMABLE};
     DELETE FROM ${s}.records WHERE kind IN (${RETIRED_INDEX_KINDS.map((k) => `'${k}'`).join(', ')});`,
};

/**
 * The summary's fields, read from one parse of each row: the records are `json` (text), which each `->`
 * parses again, so the row is cast to `jsonb` once and the fields are taken from that.
 */
const COLUMNS = `id, ${liveWorkColumns((path) => postgresField(path).replace('(data', '(parsed.j'))}`;
const FROM = '{s}.records CROSS JOIN LATERAL (SELECT data::jsonb AS j) AS parsed';
export const LIVE_WORK_SQL = `SELECT ${COLUMNS} FROM ${FROM} WHERE kind = $1 AND NOT terminal ORDER BY id`;
export const LIVE_WORK_OF_AUTOMATION_SQL =
  `SELECT ${COLUMNS} FROM ${FROM} ` + `WHERE kind = $1 AND ${AUTOMATION} = $2 AND NOT terminal ORDER BY id`;

/**
 * The set-based claim's selection: up to `$2` occurrences due at `$1` (an ISO instant, as the records hold
 * theirs), earliest first, locked for this transaction; rows another engine holds are skipped, not waited for,
 * so engines sharing a burst each take their own. `$3`: ids this pass already took.
 */
const DUE = `${CLAIMABLE} AND ${SCHEDULED_FOR} <= $1 AND (${NOT_BEFORE} IS NULL OR ${NOT_BEFORE} <= $1)`;
export const CLAIM_DUE_SQL =
  `SELECT id FROM {s}.records WHERE ${DUE} AND NOT (id = ANY($3::text[])) ` +
  `ORDER BY ${SCHEDULED_FOR}, id LIMIT $2 FOR UPDATE SKIP LOCKED`;
/** Whether the claim's selection would find anything due at `$1`, locked or not: one probe of the same index. */
export const ANY_DUE_SQL = `SELECT EXISTS (SELECT 1 FROM {s}.records WHERE ${DUE}) AS due`;
