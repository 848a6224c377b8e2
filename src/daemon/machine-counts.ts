import { OccurrenceState } from '../../machines/index.js';
import { DEFINITION_KIND } from '../domain/definition-records.js';
import {
  KINDS,
  attemptContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import { loadLifecycleSpec, type LifecycleSpec } from '../spec/lifecycle-spec.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import type { LiveKind, LiveWork, StoreReader, StoredRecord } from '../store/store.js';

/** Most entities one machine's count reads; a store past it reports `truncated` instead of reading on. */
export const COUNT_CAP = 20_000;
const PAGE = 500;

/** How many live entities of one machine sit in each of its non-terminal states. */
export interface MachineCount {
  machine: string;
  /** Every non-terminal state of the machine, 0 included; terminal states are settled history, not counted. */
  byState: Record<string, number>;
  live: number;
  /** The cap was reached: the counts cover the first {@link COUNT_CAP} entities only. */
  truncated: boolean;
  /** Where the ids came from: the store's live index, or (definitions) the definition records in pages. */
  source: string;
}

type Tally = MachineCount & { add(state: string): void };
const strip = ({ add: _add, ...rest }: Tally): MachineCount => rest;

/** The spec, read and checked once per process: its states never change while the daemon runs. */
let lifecycle: LifecycleSpec | undefined;

function tally(machine: string, source: string): Tally {
  lifecycle ??= loadLifecycleSpec();
  const spec = lifecycle.machines.find((m) => m.id === machine)!;
  const byState = Object.fromEntries(
    spec.states.filter((s) => !spec.terminal.includes(s)).map((s) => [s, 0] as [string, number]),
  );
  const count: Tally = {
    machine,
    byState,
    live: 0,
    truncated: false,
    source,
    add(state) {
      if (!(state in byState)) return;
      byState[state] = (byState[state] ?? 0) + 1;
      count.live += 1;
    },
  };
  return count;
}

/** A kind's live work from the store's index of live work, at most {@link COUNT_CAP} of it. */
async function liveOf(reader: StoreReader, kind: LiveKind): Promise<{ entries: LiveWork[]; truncated: boolean }> {
  const all = await reader.liveWork(kind);
  return { entries: all.slice(0, COUNT_CAP), truncated: all.length > COUNT_CAP };
}

/** Occurrence states that may name a run: the others were never accepted. */
const MAY_HAVE_RUN = new Set<string>([
  OccurrenceState.claimed,
  OccurrenceState.dispatching,
  OccurrenceState.running,
  OccurrenceState.recovering,
  OccurrenceState.recovery_required,
]);

/** The runs named, by id: their state and automation (one record read each). */
async function runsById(reader: StoreReader, ids: Iterable<string>): Promise<Map<string, RunRecord>> {
  const runs = new Map<string, RunRecord>();
  for (const id of ids) {
    const record = await reader.get<RunRecord['data']>(KINDS.run, id);
    if (record !== undefined) runs.set(id, record as RunRecord);
  }
  return runs;
}

async function definitionCounts(reader: StoreReader, hidden: ReadonlySet<string>): Promise<MachineCount> {
  const count = tally('definition.v1', 'definition records (paged)');
  let after: string | undefined;
  let seen = 0;
  for (;;) {
    const page: Array<StoredRecord<EntityRecord<unknown>>> = await reader.list(DEFINITION_KIND, {
      ...(after === undefined ? {} : { after }),
      limit: PAGE,
    });
    for (const record of page) if (!hidden.has(record.id)) count.add(stateOf(record));
    seen += page.length;
    if (page.length < PAGE) break;
    if (seen >= COUNT_CAP) {
      count.truncated = true;
      break;
    }
    after = page.at(-1)!.id;
  }
  return strip(count);
}

/**
 * The machine-wide view's counts: for each of the four contract machines, how many live entities sit in each
 * non-terminal state. Occurrences and attempts come from the store's live indexes (one small record per live
 * entity), runs from the runs those live occurrences and attempts name, definitions from their own records,
 * read in pages. Nothing reads the settled history, so the cost follows the live work, not the store's size.
 * Automations the read ACL hides from this caller are left out.
 *
 * @example
 * ```ts
 * const counts = await store.read((reader) => machineCounts(reader, new Set()));
 * counts.find((c) => c.machine === 'occurrence.v1')?.byState.running; // 3
 * ```
 */
export async function machineCounts(reader: StoreReader, hidden: ReadonlySet<string>): Promise<MachineCount[]> {
  const visible = (automationId: string | null | undefined) => !hidden.has(automationId ?? '');
  const liveOccurrences = await liveOf(reader, 'occurrence');
  const liveAttempts = await liveOf(reader, 'attempt');
  const occurrences = tally('occurrence.v1', 'live-work index');
  occurrences.truncated = liveOccurrences.truncated;
  const runIds = new Set<string>();
  const runOfAttempt = new Map<string, string>();
  for (const work of liveAttempts.entries) {
    const record = await reader.get<AttemptRecord['data']>(KINDS.attempt, work.id);
    if (record === undefined) continue;
    const { runId } = attemptContext(record as AttemptRecord);
    runIds.add(runId);
    runOfAttempt.set(work.id, runId);
  }
  for (const work of liveOccurrences.entries.filter((w) => visible(w.automationId))) {
    occurrences.add(work.state);
    if (!MAY_HAVE_RUN.has(work.state)) continue;
    const record = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, work.id);
    const run = (record as OccurrenceRecord | undefined)?.data.attributes.activeRunRef;
    if (run !== undefined) runIds.add(run);
  }
  const runRecords = await runsById(reader, runIds);
  const runs = tally('run.v1', 'runs of live occurrences and attempts');
  runs.truncated = occurrences.truncated || liveAttempts.truncated;
  for (const run of runRecords.values()) if (visible(run.data.attributes.automationId)) runs.add(stateOf(run));
  const attemptCount = tally('attempt.v1', 'live-work index');
  attemptCount.truncated = liveAttempts.truncated;
  for (const work of liveAttempts.entries) {
    // An attempt belongs to its run's automation.
    const run = runRecords.get(runOfAttempt.get(work.id) ?? '');
    if (visible(work.automationId ?? run?.data.attributes.automationId)) attemptCount.add(work.state);
  }
  return [await definitionCounts(reader, hidden), strip(occurrences), strip(runs), strip(attemptCount)];
}
