import { holderField, LIVE_WORK_PATHS, postgresField, RETIRED_INDEX_KINDS } from '../live-work.js';
import { LIVE_WORK_COLUMNS } from '../record-columns.js';
import type { LiveKind, LiveWorkOptions } from '../store.js';

// Schema version 5's expressions, kept for its migration's text (version 7 moved these fields to columns).
const AUTOMATION = postgresField(LIVE_WORK_PATHS.automationId);
const STATE = postgresField(LIVE_WORK_PATHS.state);
const SCHEDULED_FOR = postgresField(LIVE_WORK_PATHS.scheduledFor);

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

/** The summary's fields, from the record's columns (schema version 7). */
const COLUMNS = `id, ${Object.entries(LIVE_WORK_COLUMNS)
  .map(([field, column]) => `${column} AS "${field}"`)
  .join(', ')}`;

/**
 * A kind's live work, or an automation's, without what the engines named hold (`exceptHeldBy`: the work another
 * engine claimed or launched is never this engine's, so it is not sent at all).
 */
export function liveWorkQuery(kind: LiveKind, options: LiveWorkOptions): [string, unknown[]] {
  const values: unknown[] = [kind];
  const where = ['kind = $1', 'NOT terminal'];
  if (options.automationId !== undefined) where.push(`automation_id = $${values.push(options.automationId)}`);
  if (options.exceptHeldBy !== undefined && options.exceptHeldBy.length > 0) {
    const holder = LIVE_WORK_COLUMNS[holderField(kind)];
    where.push(`(${holder} IS NULL OR ${holder} <> ALL($${values.push(options.exceptHeldBy)}::text[]))`);
  }
  return [`SELECT ${COLUMNS} FROM {s}.records WHERE ${where.join(' AND ')} ORDER BY id`, values];
}

/**
 * The set-based claim's selection: up to `$2` occurrences due at `$1` (an ISO instant, as the records hold
 * theirs), earliest first, locked for this transaction; rows another engine holds are skipped, not waited for,
 * so engines sharing a burst each take their own. `$3`: ids this pass already took; `$4`: automations another live
 * engine claims for (its share: locking them here would only make it pass them over). The predicate is the
 * `claimable_occurrences` index's own.
 */
const DUE =
  "kind = 'occurrence' AND NOT terminal AND state IN ('planned', 'eligible') " +
  'AND scheduled_for <= $1 AND (not_before IS NULL OR not_before <= $1)';
export const CLAIM_DUE_SQL =
  `SELECT id FROM {s}.records WHERE ${DUE} AND NOT (id = ANY($3::text[])) ` +
  'AND (automation_id IS NULL OR automation_id <> ALL($4::text[])) ' +
  'ORDER BY scheduled_for, id LIMIT $2 FOR UPDATE SKIP LOCKED';
/** Whether the claim's selection would find anything due at `$1`, locked or not: one probe of the same index. */
export const ANY_DUE_SQL = `SELECT EXISTS (SELECT 1 FROM {s}.records WHERE ${DUE}) AS due`;
