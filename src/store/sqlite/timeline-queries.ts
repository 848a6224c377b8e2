import { sqliteField } from '../live-work.js';
import { STATE_PATH, TIMELINE_PATHS } from '../timeline.js';
import type { TimelineFilter, TimelineKind, TimelineOptions } from '../store.js';

const KINDS = Object.keys(TIMELINE_PATHS) as TimelineKind[];
const AT = (kind: TimelineKind) => sqliteField(TIMELINE_PATHS[kind].at);
const AUTOMATION = (kind: TimelineKind) => sqliteField(TIMELINE_PATHS[kind].automationId);
const STATE = sqliteField(STATE_PATH);

/**
 * Schema version 4: occurrences by slot and runs by start, of every automation and of each, so the operator's
 * reads page through them newest first from an index instead of reading the kind whole. Partial indexes on
 * the queries' own expressions, one kind each (the kind is part of each index's WHERE, written literally).
 */
export const TIMELINE_INDEXES = KINDS.map(
  (kind) =>
    `CREATE INDEX IF NOT EXISTS ${kind}_timeline ON records (${AT(kind)}, id) WHERE kind = '${kind}';\n` +
    `CREATE INDEX IF NOT EXISTS ${kind}_timeline_by_automation ON records (${AUTOMATION(kind)}, ${AT(kind)}, id) ` +
    `WHERE kind = '${kind}';`,
).join('\n');

/**
 * The index a filter is read through, named: without statistics SQLite's planner prefers the unique (kind, id)
 * index for `kind = '…'` and sorts every row of the kind. One automation walks its own index in order; more
 * (or all) walk the kind's, checking each row's automation.
 */
function source(kind: TimelineKind, filter: TimelineFilter): string {
  const one = filter.automationIds !== undefined && filter.automationIds.length === 1;
  return `records INDEXED BY ${kind}_timeline${one ? '_by_automation' : ''}`;
}

/** The conditions of a filter and the values they bind, in order. */
function conditions(kind: TimelineKind, filter: TimelineFilter): [string[], unknown[]] {
  const where = [`kind = '${kind}'`];
  const values: unknown[] = [];
  const ids = filter.automationIds;
  if (ids !== undefined && ids.length === 1) {
    // One automation as an equality, so the planner walks that automation's index in order.
    where.push(`${AUTOMATION(kind)} = ?`);
    values.push(ids[0]);
  } else if (ids !== undefined) {
    where.push(`${AUTOMATION(kind)} IN (SELECT value FROM json_each(?))`);
    values.push(JSON.stringify(ids));
  }
  if (filter.states !== undefined) {
    where.push(`${STATE} IN (SELECT value FROM json_each(?))`);
    values.push(JSON.stringify(filter.states));
  }
  if (filter.from !== undefined) {
    where.push(`${AT(kind)} >= ?`);
    values.push(filter.from);
  }
  if (filter.to !== undefined) {
    where.push(`${AT(kind)} < ?`);
    values.push(filter.to);
  }
  return [where, values];
}

/** A page of a timeline: the statement and its values (the kind is one of {@link TIMELINE_PATHS}'s). */
export function timelineQuery(kind: TimelineKind, options: TimelineOptions): [string, unknown[]] {
  const [where, values] = conditions(kind, options);
  if (options.before !== undefined) {
    where.push(`(${AT(kind)}, id) < (?, ?)`);
    values.push(options.before.at, options.before.id);
  }
  const sql =
    `SELECT id, ${AT(kind)} AS at, ${STATE} AS state, ${AUTOMATION(kind)} AS automationId ` +
    `FROM ${source(kind, options)} WHERE ${where.join(' AND ')} ORDER BY ${AT(kind)} DESC, id DESC LIMIT ?`;
  return [sql, [...values, options.limit]];
}

/** A timeline's counts by state. */
export function timelineCountsQuery(kind: TimelineKind, filter: TimelineFilter): [string, unknown[]] {
  const [where, values] = conditions(kind, filter);
  return [
    `SELECT ${STATE} AS state, count(*) AS n FROM ${source(kind, filter)} WHERE ${where.join(' AND ')} GROUP BY 1`,
    values,
  ];
}
