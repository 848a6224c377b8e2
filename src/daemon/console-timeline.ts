import { RunState } from '../../machines/index.js';
import { runHoldView } from '../command-handler/failure-view.js';
import { timelinePage } from '../command-handler/timeline-page.js';
import { runsOf } from '../command-handler/occurrence-reads.js';
import { KINDS, runContext, stateOf, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import type { StoreReader, TimelineEntry, TimelineFilter, TimelineKind } from '../store/store.js';
import { automationsOf, type DefinitionFacts } from './console-facts.js';
import type { ConsoleFilter } from './console-query.js';

/** The pseudo-state of a run held for an operator retry (the contract keeps such a run `running`). */
export const HELD = 'held';

/**
 * What a console filter asks of a timeline: either the store's filter (with `held` asked as `running`, judged per
 * run after), or — when `q` names one occurrence or run exactly — the ids it names.
 */
export type TimelineScope = { filter: TimelineFilter; held: boolean } | { ids: string[] };

const contains = (text: string, q: string): boolean => text.toLowerCase().includes(q.toLowerCase());

/** The ids `q` names exactly: an occurrence (or a run's occurrence), or a run (or an occurrence's runs). */
async function exactIds(reader: StoreReader, kind: TimelineKind, q: string): Promise<string[] | undefined> {
  const occurrence = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, q);
  const run = await reader.get<RunRecord['data']>(KINDS.run, q);
  if (kind === 'occurrence') {
    if (occurrence !== undefined) return [q];
    return run === undefined ? undefined : [runContext(run as RunRecord).occurrenceId];
  }
  if (run !== undefined) return [q];
  return occurrence === undefined ? undefined : (await runsOf(reader, occurrence as OccurrenceRecord)).map((r) => r.id);
}

/**
 * The scope of a console search. `q` is a state's name, an occurrence's or run's id, or part of an automation's
 * id or name; `automation`, `tag` and the read ACL narrow to the automations they keep (all, unnamed, when none
 * narrows), `state` to its states, `from`–`to` to the instants.
 */
export async function timelineScope(
  reader: StoreReader,
  kind: TimelineKind,
  facts: Map<string, DefinitionFacts>,
  filter: ConsoleFilter,
  narrowed: boolean,
  states: ReadonlySet<string>,
): Promise<TimelineScope> {
  const q = filter.q;
  let wanted = filter.states;
  let automations = automationsOf(facts, filter);
  if (q !== undefined && states.has(q)) wanted = wanted.length === 0 ? [q] : wanted.filter((s) => s === q);
  else if (q !== undefined) {
    const ids = await exactIds(reader, kind, q);
    if (ids !== undefined) return { ids };
    automations = new Set([...automations].filter((id) => contains(id, q) || contains(facts.get(id)?.name ?? '', q)));
    narrowed = true;
  }
  const held = wanted.includes(HELD);
  const asked = held ? [...new Set([...wanted.filter((s) => s !== HELD), RunState.running])] : wanted;
  return {
    held,
    filter: {
      ...(narrowed || filter.automationId !== undefined || filter.tag !== undefined
        ? { automationIds: [...automations] }
        : {}),
      ...(asked.length === 0 ? {} : { states: asked }),
      ...(filter.from === undefined ? {} : { from: filter.from }),
      ...(filter.to === undefined ? {} : { to: filter.to }),
    },
  };
}

/** Whether a run is held for an operator retry now (only a running run can be). */
export async function isHeld(reader: StoreReader, runId: string): Promise<boolean> {
  const run = await reader.get<RunRecord['data']>(KINDS.run, runId);
  return (
    run !== undefined &&
    stateOf(run as RunRecord) === RunState.running &&
    (await runHoldView(reader, run as RunRecord)) !== undefined
  );
}

/**
 * The check a scope's entries must pass beyond the store's filter: with `held` asked, a running run passes only
 * when it is held (unless `running` itself was asked too).
 */
export function heldCheck(
  reader: StoreReader,
  scope: { held: boolean },
  asked: readonly string[],
): ((entry: TimelineEntry) => Promise<boolean>) | undefined {
  if (!scope.held || asked.includes(RunState.running)) return undefined;
  return async (entry) => entry.state !== RunState.running || isHeld(reader, entry.id);
}

/** How many running runs of a filter are held, judged run by run (running runs are live work: few). */
export async function heldCount(reader: StoreReader, filter: TimelineFilter): Promise<number> {
  let held = 0;
  let before: { at: string; id: string } | undefined;
  for (;;) {
    const page = await timelinePage(reader, 'run', {
      ...filter,
      states: [RunState.running],
      limit: 500,
      ...(before === undefined ? {} : { before }),
    });
    for (const entry of page.entries) if (await isHeld(reader, entry.id)) held += 1;
    if (page.next === undefined) return held;
    before = page.next;
  }
}
