import { DEFINITION_STATES, OCCURRENCE_STATES, RUN_STATES, RunState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import { KINDS, stateOf, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { inRange, type ConsoleFilter } from './console-query.js';
import { automationsOf, definitionFacts, HELD } from './console-reads.js';
import { runHoldView } from '../command-handler/failure-view.js';

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
  const occurrences = zeroes(OCCURRENCE_STATES);
  for (const o of (await reader.list<OccurrenceRecord['data']>(KINDS.occurrence)) as OccurrenceRecord[]) {
    if (!automations.has(o.data.attributes.automationId) || !inRange(o.data.attributes.scheduledFor, filter)) continue;
    occurrences[stateOf(o)] = (occurrences[stateOf(o)] ?? 0) + 1;
  }
  const runs = zeroes([...RUN_STATES, HELD]);
  for (const run of (await reader.list<RunRecord['data']>(KINDS.run)) as RunRecord[]) {
    if (!automations.has(run.data.attributes.automationId) || !inRange(run.data.attributes.startedAt, filter)) continue;
    const state = stateOf(run);
    runs[state] = (runs[state] ?? 0) + 1;
    if (state === RunState.running && (await runHoldView(reader, run)) !== undefined) runs[HELD]! += 1;
  }
  const definitions = zeroes(DEFINITION_STATES);
  for (const id of automations) {
    const state = facts.get(id)!.lifecycleState;
    definitions[state] = (definitions[state] ?? 0) + 1;
  }
  return { occurrences, runs, definitions };
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
  const automations = automationsOf(await definitionFacts(reader, hidden), filter);
  for (const run of (await reader.list<RunRecord['data']>(KINDS.run)) as RunRecord[]) {
    if (!automations.has(run.data.attributes.automationId)) continue;
    const at = Date.parse(run.data.attributes.startedAt);
    if (at < from || at >= to) continue;
    const row = rows[Math.floor((at - from) / width)];
    if (row === undefined) continue;
    const state = stateOf(run);
    row[state] = Number(row[state] ?? 0) + 1;
  }
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    bucketMs: width,
    states: RUN_STATES,
    buckets: rows,
  };
}
