import { RunState } from '../../machines/index.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import type { StoreReader, TimelineFilter, TimelineKind } from '../store/store.js';
import { recordsNamed } from './timeline-page.js';

/** Runs read per step of {@link recentRuns}, and the most it reads for one automation. */
const RUNS_STEP = 50;
export const RECENT_RUNS_READ = 1_000;

/** The records of one timeline page of an automation, newest first. */
async function newest<R>(
  reader: StoreReader,
  kind: TimelineKind,
  filter: TimelineFilter,
  limit: number,
  before?: { at: string; id: string },
): Promise<{ records: R[]; entries: number; last?: { at: string; id: string } }> {
  const page = await reader.timeline(kind, { ...filter, limit, ...(before === undefined ? {} : { before }) });
  const records = await recordsNamed<R>(
    reader,
    kind,
    page.map((e) => e.id),
  );
  const last = page.at(-1);
  return last === undefined ? { records, entries: 0 } : { records, entries: page.length, last };
}

/**
 * An automation's newest runs (by start) back to its latest success, at most {@link RECENT_RUNS_READ}: what its
 * consecutive failures and last run are judged from, read from the store's timeline of its runs.
 */
export async function recentRuns(reader: StoreReader, automationId: string): Promise<RunRecord[]> {
  const runs: RunRecord[] = [];
  let before: { at: string; id: string } | undefined;
  for (;;) {
    const page = await newest<RunRecord>(reader, 'run', { automationIds: [automationId] }, RUNS_STEP, before);
    runs.push(...page.records);
    const succeeded = page.records.some((r) => stateOf(r) === RunState.succeeded);
    if (page.entries < RUNS_STEP || runs.length >= RECENT_RUNS_READ || succeeded || page.last === undefined)
      return runs;
    before = page.last;
  }
}

/** An automation's newest `limit` runs in one of `states` (by start). */
export async function newestRunsIn(
  reader: StoreReader,
  automationId: string,
  states: string[],
  limit: number,
): Promise<RunRecord[]> {
  return (await newest<RunRecord>(reader, 'run', { automationIds: [automationId], states }, limit)).records;
}

/** An automation's newest `limit` occurrences (by slot). */
export async function newestOccurrences(
  reader: StoreReader,
  automationId: string,
  limit: number,
): Promise<OccurrenceRecord[]> {
  return (await newest<OccurrenceRecord>(reader, 'occurrence', { automationIds: [automationId] }, limit)).records;
}

/** An automation's live occurrences, from the store's index of live work. */
export async function liveOccurrencesOf(reader: StoreReader, automationId: string): Promise<OccurrenceRecord[]> {
  const live: OccurrenceRecord[] = [];
  for (const { id } of await reader.liveWork('occurrence', { automationId })) {
    const o = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
    if (o !== undefined && OCCURRENCE_LIVE.has(stateOf(o as OccurrenceRecord))) live.push(o as OccurrenceRecord);
  }
  return live;
}
