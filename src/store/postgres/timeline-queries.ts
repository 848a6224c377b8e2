import { postgresField } from '../live-work.js';
import { TIMELINE_PATHS } from '../timeline.js';
import type { TimelineEntry, TimelineFilter, TimelineKind, TimelineOptions } from '../store.js';

const KINDS = Object.keys(TIMELINE_PATHS) as TimelineKind[];
// Schema version 6's expressions, kept for its migration's text (version 7 moved these fields to columns).
/** Byte order, as ids and the other stores' strings compare (an ISO instant sorts the same either way). */
const V6_AT = (kind: TimelineKind) => `(${postgresField(TIMELINE_PATHS[kind].at)} COLLATE "C")`;
const V6_AUTOMATION = (kind: TimelineKind) => postgresField(TIMELINE_PATHS[kind].automationId);

// The columns (schema version 7, collated "C": byte order, as ids and the other stores' strings compare). A record
// has a timeline instant only when it has all a timeline entry needs, as the memory stores' entries do.
const AT = 'timeline_at';
const AUTOMATION = 'timeline_automation_id';
const STATE = 'state';

/**
 * Schema version 6: occurrences by slot and runs by start, of every automation and of each, so the operator's
 * reads page through them newest first from an index instead of reading the kind whole.
 */
export const TIMELINE_MIGRATION = {
  version: 6,
  sql: (s: string) =>
    KINDS.map(
      (kind) =>
        `CREATE INDEX ${kind}_timeline ON ${s}.records (${V6_AT(kind)}, id) WHERE kind = '${kind}';
         CREATE INDEX ${kind}_timeline_by_automation ON ${s}.records (${V6_AUTOMATION(kind)}, ${V6_AT(kind)}, id)
           WHERE kind = '${kind}';`,
    ).join('\n'),
};

/** The conditions of a filter; `values` gets what they bind, numbered after what it already holds. */
function conditions(kind: TimelineKind, filter: TimelineFilter, values: unknown[]): string[] {
  const bind = (value: unknown) => `$${values.push(value)}`;
  const where = [`kind = '${kind}'`, `${AT} IS NOT NULL`];
  const ids = filter.automationIds;
  if (ids !== undefined && ids.length === 1) where.push(`${AUTOMATION} = ${bind(ids[0])}`);
  else if (ids !== undefined) where.push(`${AUTOMATION} = ANY(${bind(ids)}::text[])`);
  if (filter.states !== undefined) where.push(`${STATE} = ANY(${bind(filter.states)}::text[])`);
  if (filter.from !== undefined) where.push(`${AT} >= ${bind(filter.from)}`);
  if (filter.to !== undefined) where.push(`${AT} < ${bind(filter.to)}`);
  return where;
}

/** A page of a timeline: the statement (`{s}` for the schema) and its values. */
export function timelineQuery(kind: TimelineKind, options: TimelineOptions): [string, unknown[]] {
  const values: unknown[] = [];
  const where = conditions(kind, options, values);
  if (options.before !== undefined)
    where.push(`(${AT}, id) < ($${values.push(options.before.at)}, $${values.push(options.before.id)})`);
  const sql =
    `SELECT id, ${AT} AS at, ${STATE} AS state, ${AUTOMATION} AS "automationId" FROM {s}.records ` +
    `WHERE ${where.join(' AND ')} ORDER BY ${AT} DESC, id DESC LIMIT $${values.push(options.limit)}`;
  return [sql, values];
}

/** A timeline's counts by state. */
export function timelineCountsQuery(kind: TimelineKind, filter: TimelineFilter): [string, unknown[]] {
  const values: unknown[] = [];
  const where = conditions(kind, filter, values);
  return [
    `SELECT ${STATE} AS state, count(*)::int AS n FROM {s}.records WHERE ${where.join(' AND ')} GROUP BY 1`,
    values,
  ];
}

/** What the timeline reads need of a connection. */
interface Rows {
  rows<R extends object>(text: string, values: unknown[]): Promise<R[]>;
}

/** The Store port's `timeline` on PostgreSQL. */
export async function readTimeline(db: Rows, kind: TimelineKind, options: TimelineOptions): Promise<TimelineEntry[]> {
  const [sql, values] = timelineQuery(kind, options);
  return db.rows<TimelineEntry>(sql, values);
}

/** The Store port's `timelineCounts` on PostgreSQL. */
export async function readTimelineCounts(
  db: Rows,
  kind: TimelineKind,
  filter: TimelineFilter,
): Promise<Record<string, number>> {
  const [sql, values] = timelineCountsQuery(kind, filter);
  const rows = await db.rows<{ state: string; n: number }>(sql, values);
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}
