import { OCCURRENCE_STATES, RUN_STATES } from '../../machines/index.js';
import { attemptFailureView, runHoldView } from '../command-handler/failure-view.js';
import { recordsNamed, timelinePage } from '../command-handler/timeline-page.js';
import {
  KINDS,
  renderOccurrence,
  renderRun,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { StoreReader, TimelineKind } from '../store/store.js';
import { automationsOf, definitionFacts, type DefinitionFacts } from './console-facts.js';
import { decodeCursor, encodeCursor, inRange, pageOf, type ConsoleFilter, type ConsolePage } from './console-query.js';
import { HELD, heldCheck, heldCount, isHeld, timelineScope, type TimelineScope } from './console-timeline.js';

export { HELD } from './console-timeline.js';
export { automationsOf, definitionFacts, type DefinitionFacts } from './console-facts.js';

const STATES: Record<TimelineKind, ReadonlySet<string>> = {
  occurrence: new Set(OCCURRENCE_STATES),
  run: new Set([...RUN_STATES, HELD]),
};

/** The facts a row carries for the page (the zone its times are shown in, the tags it is filed under). */
const factsOf = (facts: Map<string, DefinitionFacts>, automationId: string) => {
  const f = facts.get(automationId);
  return { timezone: f?.timezone ?? null, tags: f?.tags ?? [] };
};

/** One page of a search: the records shown, how many matched in all, and the cursor of the next page. */
interface Found<R> {
  rows: R[];
  matched: number;
  cursor: { hasMore: boolean; next?: string };
}

/** The records an exact id names that the rest of the filter keeps, as one page. */
async function exactPage<R extends OccurrenceRecord | RunRecord>(
  reader: StoreReader,
  kind: TimelineKind,
  ids: string[],
  filter: ConsoleFilter,
  automations: Set<string>,
  at: (record: R) => string,
): Promise<Found<R>> {
  const rows: R[] = [];
  for (const record of await recordsNamed<R>(reader, kind, ids)) {
    const state = stateOf(record);
    const wanted =
      filter.states.length === 0 ||
      filter.states.includes(state) ||
      (filter.states.includes(HELD) && (await isHeld(reader, record.id)));
    if (automations.has(record.data.attributes.automationId) && wanted && inRange(at(record), filter))
      rows.push(record);
  }
  const shown = pageOf(rows, (r) => ({ key: at(r), id: r.id }), { limit: 100 }, kind, 'newest');
  return { rows: shown.rows, matched: rows.length, cursor: { hasMore: false } };
}

/**
 * One page of a kind's timeline as the console asks for it: newest first, `matched` from the store's counts
 * (held runs judged one by one: they are live work, few).
 */
async function searchTimeline<R extends OccurrenceRecord | RunRecord>(
  reader: StoreReader,
  kind: TimelineKind,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
  facts: Map<string, DefinitionFacts>,
  at: (record: R) => string,
): Promise<Found<R>> {
  const scope: TimelineScope = await timelineScope(reader, kind, facts, filter, hidden.size > 0, STATES[kind]);
  if ('ids' in scope) return exactPage(reader, kind, scope.ids, filter, automationsOf(facts, filter), at);
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, kind);
  const keepHeld = heldCheck(reader, scope, filter.states);
  const found = await timelinePage(
    reader,
    kind,
    { ...scope.filter, limit: page.limit, ...(after === undefined ? {} : { before: { at: after.key, id: after.id } }) },
    keepHeld,
  );
  const counts = await reader.timelineCounts(kind, scope.filter);
  let matched = Object.values(counts).reduce((sum, n) => sum + n, 0);
  if (keepHeld !== undefined) matched += (await heldCount(reader, scope.filter)) - (counts.running ?? 0);
  return {
    rows: await recordsNamed<R>(
      reader,
      kind,
      found.entries.map((e) => e.id),
    ),
    matched,
    cursor: {
      hasMore: found.next !== undefined,
      ...(found.next === undefined ? {} : { next: encodeCursor({ key: found.next.at, id: found.next.id }, kind) }),
    },
  };
}

/**
 * The occurrences a filter matches, newest slot first, one page read from the store's timeline of occurrences.
 * `q` is a state's name, an occurrence's id (or a run's: its occurrence), or part of an automation's id or name.
 */
export async function searchOccurrences(
  reader: StoreReader,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  const facts = await definitionFacts(reader, hidden);
  const found = await searchTimeline<OccurrenceRecord>(
    reader,
    'occurrence',
    filter,
    page,
    hidden,
    facts,
    (o) => o.data.attributes.scheduledFor,
  );
  return {
    occurrences: found.rows.map((o) => ({
      ...renderOccurrence(o),
      ...factsOf(facts, o.data.attributes.automationId),
    })),
    matched: found.matched,
    cursor: found.cursor,
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

/**
 * The runs a filter matches, newest start first, one page read from the store's timeline of runs; the state
 * `held` matches runs held for an operator retry. `q` is a state's name, a run's id (or an occurrence's: its
 * runs), or part of an automation's id or name.
 */
export async function searchRuns(
  reader: StoreReader,
  filter: ConsoleFilter,
  page: ConsolePage,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  const facts = await definitionFacts(reader, hidden);
  const found = await searchTimeline<RunRecord>(
    reader,
    'run',
    filter,
    page,
    hidden,
    facts,
    (r) => r.data.attributes.startedAt,
  );
  const runs = [];
  for (const run of found.rows) runs.push(await consoleRun(reader, run, facts));
  return { runs, matched: found.matched, cursor: found.cursor };
}

const contains = (text: string | undefined, q: string): boolean =>
  text !== undefined && text.toLowerCase().includes(q.toLowerCase());

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
