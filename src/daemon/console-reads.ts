import { RunState } from '../../machines/index.js';
import { attemptFailureView, runHoldView } from '../command-handler/failure-view.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import { DEFINITION_KIND, type DefinitionAttributes, type DefinitionRecord } from '../domain/definition-records.js';
import {
  KINDS,
  renderOccurrence,
  renderRun,
  runContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { inRange, pageOf, type ConsoleFilter, type ConsolePage } from './console-query.js';

/** The pseudo-state of a run held for an operator retry (the contract keeps such a run `running`). */
export const HELD = 'held';

/** What the console shows beside any row of an automation: its name, its schedule's zone and its tags. */
export interface DefinitionFacts {
  automationId: string;
  name: string;
  lifecycleState: string;
  revision: number;
  timezone: string;
  tags: string[];
}

/** Every definition the caller may read, by id: one pass over the definitions (hundreds, not thousands). */
export async function definitionFacts(
  reader: StoreReader,
  hidden: ReadonlySet<string>,
): Promise<Map<string, DefinitionFacts>> {
  const facts = new Map<string, DefinitionFacts>();
  for (const record of await reader.list<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND)) {
    if (hidden.has(record.id)) continue;
    const body = record.data.attributes.definition;
    facts.set(record.id, {
      automationId: record.id,
      name: body.display.name,
      lifecycleState: stateOf(record as DefinitionRecord),
      revision: body.revision,
      timezone: body.trigger.schedule.timezone,
      tags: body.display.tags ?? [],
    });
  }
  return facts;
}

/** The automations a filter keeps: those the caller may read, of the named automation and tag. */
export function automationsOf(facts: Map<string, DefinitionFacts>, filter: ConsoleFilter): Set<string> {
  const kept = new Set<string>();
  for (const [id, f] of facts) {
    if (filter.automationId !== undefined && id !== filter.automationId) continue;
    if (filter.tag !== undefined && !f.tags.includes(filter.tag)) continue;
    kept.add(id);
  }
  return kept;
}

const contains = (text: string | undefined, q: string): boolean =>
  text !== undefined && text.toLowerCase().includes(q.toLowerCase());

/** The facts a row carries for the page (the zone its times are shown in, the tags it is filed under). */
const factsOf = (facts: Map<string, DefinitionFacts>, automationId: string) => {
  const f = facts.get(automationId);
  return { timezone: f?.timezone ?? null, tags: f?.tags ?? [] };
};

/**
 * The occurrences a filter matches, newest slot first, one page. `q` matches part of an occurrence, automation or
 * active run id, a state's name, or exactly a run id (any of the occurrence's runs).
 */
export async function searchOccurrences(
  reader: StoreReader,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  const facts = await definitionFacts(reader, hidden);
  const automations = automationsOf(facts, filter);
  const run = filter.q === undefined ? undefined : await reader.get<RunRecord['data']>(KINDS.run, filter.q);
  const runOccurrence = run === undefined ? undefined : runContext(run as RunRecord).occurrenceId;
  const matches = ((await reader.list<OccurrenceRecord['data']>(KINDS.occurrence)) as OccurrenceRecord[]).filter(
    (o) => {
      const a = o.data.attributes;
      if (!automations.has(a.automationId)) return false;
      const state = stateOf(o);
      if (filter.states.length > 0 && !filter.states.includes(state)) return false;
      if (!inRange(a.scheduledFor, filter)) return false;
      const q = filter.q;
      return (
        q === undefined ||
        o.id === runOccurrence ||
        state === q ||
        contains(o.id, q) ||
        contains(a.automationId, q) ||
        contains(a.activeRunRef, q)
      );
    },
  );
  const shown = pageOf(
    matches,
    (o) => ({ key: o.data.attributes.scheduledFor, id: o.id }),
    page,
    'occurrences',
    'newest',
  );
  return {
    occurrences: shown.rows.map((o) => ({
      ...renderOccurrence(o),
      ...factsOf(facts, o.data.attributes.automationId),
    })),
    matched: shown.matched,
    cursor: shown.cursor,
  };
}

/** A run as the console lists it: the run, its latest attempt, how that failed, and its hold. */
export async function consoleRun(
  reader: StoreReader,
  run: RunRecord,
  facts: Map<string, DefinitionFacts>,
): Promise<Record<string, unknown>> {
  const attemptId = run.data.attributes.attemptIds.at(-1);
  const attempt =
    attemptId === undefined
      ? undefined
      : ((await reader.get<AttemptRecord['data']>(KINDS.attempt, attemptId)) as AttemptRecord | undefined);
  const failure = attempt === undefined ? undefined : attemptFailureView(attempt);
  const hold = await runHoldView(reader, run);
  return {
    ...renderRun(run),
    ...factsOf(facts, run.data.attributes.automationId),
    latestAttempt:
      attempt === undefined
        ? null
        : {
            attemptNumber: (attempt.data.snapshot.context as { attemptNumber: number }).attemptNumber,
            state: stateOf(attempt),
          },
    ...(failure === undefined ? {} : { failure }),
    ...(hold === undefined ? {} : { hold }),
  };
}

/** Whether a run is held for an operator retry now (only a running run can be). */
async function isHeld(reader: StoreReader, run: RunRecord): Promise<boolean> {
  return stateOf(run) === RunState.running && (await runHoldView(reader, run)) !== undefined;
}

/**
 * The runs a filter matches, newest start first, one page; the state `held` matches runs held for an operator
 * retry. `q` matches part of a run, occurrence or automation id, or a state's name.
 */
export async function searchRuns(
  reader: StoreReader,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  const facts = await definitionFacts(reader, hidden);
  const automations = automationsOf(facts, filter);
  const matches: RunRecord[] = [];
  for (const run of (await reader.list<RunRecord['data']>(KINDS.run)) as RunRecord[]) {
    const a = run.data.attributes;
    if (!automations.has(a.automationId) || !inRange(a.startedAt, filter)) continue;
    const state = stateOf(run);
    const q = filter.q;
    const named =
      q === undefined ||
      state === q ||
      contains(run.id, q) ||
      contains(runContext(run).occurrenceId, q) ||
      contains(a.automationId, q);
    if (!named) continue;
    const wanted =
      filter.states.length === 0 ||
      filter.states.includes(state) ||
      (filter.states.includes(HELD) && (await isHeld(reader, run)));
    if (wanted) matches.push(run);
  }
  const shown = pageOf(matches, (r) => ({ key: r.data.attributes.startedAt, id: r.id }), page, 'runs', 'newest');
  const runs = [];
  for (const run of shown.rows) runs.push(await consoleRun(reader, run, facts));
  return { runs, matched: shown.matched, cursor: shown.cursor };
}

/** The definitions a filter matches, by id, one page; `q` matches part of the id or the name. */
export async function searchDefinitions(
  reader: StoreReader,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
): Promise<{ definitions: DefinitionFacts[]; matched: number; cursor: { hasMore: boolean; next?: string } }> {
  const facts = await definitionFacts(reader, hidden);
  const automations = automationsOf(facts, filter);
  const matches = [...facts.values()].filter(
    (f) =>
      automations.has(f.automationId) &&
      (filter.states.length === 0 || filter.states.includes(f.lifecycleState)) &&
      (filter.q === undefined || contains(f.automationId, filter.q) || contains(f.name, filter.q)),
  );
  const shown = pageOf(matches, (f) => ({ key: f.automationId, id: f.automationId }), page, 'definitions', 'ascending');
  return { definitions: shown.rows, matched: shown.matched, cursor: shown.cursor };
}
