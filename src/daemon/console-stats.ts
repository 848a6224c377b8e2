import { DEFINITION_STATES, OCCURRENCE_STATES, RUN_STATES, RunState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import type { StoreReader, TimelineFilter } from '../store/store.js';
import type { ConsoleFilter } from './console-query.js';
import { automationsOf, definitionFacts } from './console-facts.js';
import { HELD, heldCount } from './console-timeline.js';

/** At most this many buckets in a runs-over-time answer, whatever range is asked for. */
export const MAX_BUCKETS = 200;
const DEFAULT_BUCKETS = 24;
const DAY_MS = 24 * 60 * 60 * 1000;

const zeroes = (states: readonly string[]): Record<string, number> =>
  Object.fromEntries(states.map((state) => [state, 0]));

/**
 * How many occurrences, runs and definitions sit in each state (every state named, zero included), of the
 * automations the filter keeps; occurrences by slot and runs by start within `from`–`to` when given. A run held
 * for an operator retry counts as `running` and again under `held`.
 *
 * @example
 * ```ts
 * const counts = await store.read((r) => consoleCounts(r, { states: [] }, new Set()));
 * counts.occurrences.failed; // 3
 * ```
 */
export async function consoleCounts(
  reader: StoreReader,
  filter: ConsoleFilter,
  hidden: ReadonlySet<string>,
): Promise<{ occurrences: Record<string, number>; runs: Record<string, number>; definitions: Record<string, number> }> {
  const facts = await definitionFacts(reader, hidden);
  const automations = automationsOf(facts, filter);
  const scope = timelineFilter(automations, filter, hidden);
  const occurrences = { ...zeroes(OCCURRENCE_STATES), ...(await reader.timelineCounts('occurrence', scope)) };
  const runs: Record<string, number> = {
    ...zeroes(RUN_STATES),
    ...(await reader.timelineCounts('run', scope)),
    [HELD]: 0,
  };
  if ((runs[RunState.running] ?? 0) > 0) runs[HELD] = await heldCount(reader, scope);
  const definitions = zeroes(DEFINITION_STATES);
  for (const id of automations) {
    const state = facts.get(id)!.lifecycleState;
    definitions[state] = (definitions[state] ?? 0) + 1;
  }
  return { occurrences, runs, definitions };
}

/** The store's filter for a console filter without states: the automations it keeps, when any narrowing applies. */
function timelineFilter(automations: Set<string>, filter: ConsoleFilter, hidden: ReadonlySet<string>): TimelineFilter {
  const narrowed = hidden.size > 0 || filter.automationId !== undefined || filter.tag !== undefined;
  return {
    ...(narrowed ? { automationIds: [...automations] } : {}),
    ...(filter.from === undefined ? {} : { from: filter.from }),
    ...(filter.to === undefined ? {} : { to: filter.to }),
  };
}

/** `buckets` of a runs-over-time query: 1–200, default 24. */
export function parseBuckets(query: Record<string, unknown>): number {
  const text = query.buckets;
  if (text === undefined || text === '') return DEFAULT_BUCKETS;
  if (typeof text !== 'string' || !/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > MAX_BUCKETS)
    throw new ContractError('VALIDATION_FAILED', `buckets must be a whole number 1–${MAX_BUCKETS}`, {
      field: 'buckets',
    });
  return Number(text);
}

/**
 * Runs started in each of `buckets` equal spans of `from`–`to` (default: the 24 hours up to the end of the engine
 * clock's current hour), by the state each run is in now. Each bucket's `start` is an ISO instant.
 */
export async function runsOverTime(
  reader: StoreReader,
  filter: ConsoleFilter,
  buckets: number,
  now: Date,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  // The end of the current hour: a run started this very instant falls in the last bucket.
  const hourEnd = (Math.floor(now.getTime() / 3_600_000) + 1) * 3_600_000;
  const to = filter.to === undefined ? hourEnd : Date.parse(filter.to);
  const from = filter.from === undefined ? to - DAY_MS : Date.parse(filter.from);
  const width = Math.max(1, Math.ceil((to - from) / buckets));
  const rows = Array.from({ length: buckets }, (_, i) => ({
    start: new Date(from + i * width).toISOString(),
    ...zeroes(RUN_STATES),
  })) as Array<Record<string, number | string>>;
  // One count per bucket, each a range of the store's timeline of runs: the runs are never read.
  const scope = timelineFilter(automationsOf(await definitionFacts(reader, hidden), filter), filter, hidden);
  for (const [i, row] of rows.entries()) {
    const start = from + i * width;
    const end = Math.min(to, start + width);
    if (start >= end) continue;
    const counts = await reader.timelineCounts('run', {
      ...scope,
      from: new Date(start).toISOString(),
      to: new Date(end).toISOString(),
    });
    for (const [state, n] of Object.entries(counts)) row[state] = Number(row[state] ?? 0) + n;
  }
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    bucketMs: width,
    states: RUN_STATES,
    buckets: rows,
  };
}
