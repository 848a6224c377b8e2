import { DEFINITION_STATES, OCCURRENCE_STATES, OccurrenceState, RUN_STATES } from '../../../machines/states.js';
import type { BulkItem } from './bulk.js';
import { Charts } from './charts.js';
import {
  readPage,
  type ConsoleDefinition,
  type ConsoleOccurrence,
  type ConsoleRun,
  type Filter,
  type Scope,
} from './console-api.js';
import { failureText, type Dashboard } from './context.js';
import { el, fill, instant, stateBadge, table } from './dom.js';
import { exitSummary } from './failure-panel.js';
import { RUN_VERBS } from './failures-view.js';
import { CursorPager } from './pager.js';
import { NewestRead } from './newest-read.js';
import { allPages, bulkBar, Selection, type BulkVerb, type NotApplicable } from './selection.js';
import { learnZone, viewerZone } from './zones.js';

const PAGE = 25;
const STATES: Record<Scope, readonly string[]> = {
  occurrences: OCCURRENCE_STATES,
  runs: [...RUN_STATES, 'held'],
  definitions: DEFINITION_STATES,
};

type Row = { id: string; scope: Scope; data: Record<string, unknown> };

const CANCELLABLE = new Set<string>([
  OccurrenceState.planned,
  OccurrenceState.eligible,
  OccurrenceState.claimed,
  OccurrenceState.dispatching,
  OccurrenceState.running,
]);

const cancelOccurrence = (o: ConsoleOccurrence): BulkItem | NotApplicable =>
  CANCELLABLE.has(o.state)
    ? {
        id: o.occurrenceId,
        command: 'occurrence.cancel.v1',
        payload: { occurrenceId: o.occurrenceId, reason: 'cancelled from the dashboard' },
      }
    : { id: o.occurrenceId, refusal: `occurrence is ${o.state}; only live work can be cancelled` };

const lifecycle = (verb: string, command: string) => (d: ConsoleDefinition) => ({
  id: d.automationId,
  command,
  payload: { automationId: d.automationId },
  expectedRevision: d.revision,
  verb,
});

/** The bulk verbs of each scope; each sends one command per entity. */
const VERBS: Record<Scope, Array<BulkVerb<Record<string, unknown>>>> = {
  occurrences: [{ verb: 'cancel', item: (r) => cancelOccurrence(r as unknown as ConsoleOccurrence) }],
  runs: RUN_VERBS as unknown as Array<BulkVerb<Record<string, unknown>>>,
  definitions: [
    { verb: 'pause', item: (r) => lifecycle('pause', 'definition.pause.v1')(r as unknown as ConsoleDefinition) },
    {
      verb: 'activate',
      item: (r) => lifecycle('activate', 'definition.activate.v1')(r as unknown as ConsoleDefinition),
    },
  ],
};

const HEADERS: Record<Scope, string[]> = {
  occurrences: ['', 'occurrence', 'automation', 'state', 'slot'],
  runs: ['', 'run', 'automation', 'state', 'started', 'failure'],
  definitions: ['', 'automation', 'state', 'rev', 'zone', 'tags'],
};

function idOf(scope: Scope, data: Record<string, unknown>): string {
  return String(scope === 'occurrences' ? data.occurrenceId : scope === 'runs' ? data.runId : data.automationId);
}

/** The cells of one result row (after its tick box). */
function cells(dashboard: Dashboard, row: Row): HTMLTableCellElement[] {
  const open = (occurrenceId: string) =>
    el('button', { 'data-testid': `find-open-${row.id}`, onclick: () => dashboard.select(occurrenceId) }, 'open');
  if (row.scope === 'occurrences') {
    const o = row.data as unknown as ConsoleOccurrence;
    return [
      el('td', {}, el('code', {}, row.id), ' ', open(row.id)),
      el('td', {}, el('code', {}, o.automationId)),
      el('td', {}, stateBadge(o.state)),
      el('td', {}, instant(o.scheduledFor, { timezone: o.timezone ?? undefined })),
    ];
  }
  if (row.scope === 'runs') {
    const r = row.data as unknown as ConsoleRun;
    return [
      el('td', {}, el('code', {}, row.id), ' ', open(r.occurrenceId)),
      el('td', {}, el('code', {}, r.automationId)),
      el('td', {}, stateBadge(r.hold === undefined ? r.state : 'held')),
      el('td', {}, instant(r.startedAt, { timezone: r.timezone ?? undefined })),
      el('td', { class: 'muted' }, r.failure === undefined ? '' : exitSummary(r.failure)),
    ];
  }
  const d = row.data as unknown as ConsoleDefinition;
  return [
    el('td', {}, el('code', {}, row.id), el('div', { class: 'muted' }, d.name)),
    el('td', {}, stateBadge(d.lifecycleState)),
    el('td', {}, d.revision),
    el('td', { class: 'mono' }, d.timezone),
    el('td', { class: 'muted' }, d.tags.join(', ')),
  ];
}

/** `2026-03-02T09:00` (a datetime-local value, the viewer's wall clock) as an ISO instant; '' when empty. */
function isoOf(local: string): string {
  if (local === '') return '';
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? '' : at.toISOString();
}

/**
 * The find panel: search by automation, occurrence, run or state; filter by state, tag and time range; one page
 * at a time through the console reads' cursors; bulk actions over the ticked rows or every match; and the charts
 * of the same filter.
 */
export class FindPanel {
  private scope: Scope = 'occurrences';
  private filter: Filter = {};
  private readonly pager = new CursorPager('find', () => void this.renderResults());
  private readonly selection = new Selection<Record<string, unknown>>();
  private readonly summary = el('div', { 'data-testid': 'find-bulk-result' });
  private readonly bar = el('div');
  private readonly results = el('div', { 'data-testid': 'find-results' });
  private readonly chartBox = el('div', { class: 'charts', 'data-testid': 'charts' });
  private readonly charts: Charts;
  private matched = 0;
  private readonly reads = new NewestRead();

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {
    this.charts = new Charts(dashboard, this.chartBox);
    fill(target, this.form(), this.bar, this.summary, this.results, this.chartBox);
  }

  private form(): HTMLFormElement {
    const field = (name: string, attributes: Record<string, string> = {}) =>
      el('input', { name, 'data-testid': `find-${name}`, 'aria-label': name, ...attributes });
    const scope = el(
      'select',
      { name: 'scope', 'data-testid': 'find-scope', 'aria-label': 'what to find' },
      ...(['occurrences', 'runs', 'definitions'] as const).map((s) => el('option', { value: s }, s)),
    );
    const state = el('select', { name: 'state', 'data-testid': 'find-state', 'aria-label': 'state' });
    const states = () =>
      fill(
        state,
        el('option', { value: '' }, 'any state'),
        ...STATES[scope.value as Scope].map((s) => el('option', { value: s }, s)),
      );
    states();
    scope.addEventListener('change', states);
    const form = el(
      'form',
      { class: 'inline', 'data-testid': 'find-form' },
      scope,
      field('q', { placeholder: 'id or state (automation, occurrence, run)' }),
      state,
      field('tag', { placeholder: 'tag' }),
      field('automation', { placeholder: 'automation id' }),
      el('label', {}, 'from ', field('from', { type: 'datetime-local' })),
      el('label', {}, 'to ', field('to', { type: 'datetime-local' })),
      el('span', { class: 'muted' }, `(your zone, ${viewerZone()})`),
      el('button', { type: 'submit', 'data-testid': 'find-submit' }, 'find'),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value;
      this.scope = scope.value as Scope;
      this.filter = {
        q: value('q'),
        state: state.value,
        tag: value('tag'),
        automation: value('automation'),
        from: isoOf(value('from')),
        to: isoOf(value('to')),
      };
      this.pager.reset();
      this.selection.clear();
      fill(this.summary);
      void this.render();
    });
    return form;
  }

  private renderBar(): void {
    fill(
      this.bar,
      bulkBar(
        this.dashboard,
        {
          name: 'find',
          verbs: VERBS[this.scope],
          selection: this.selection,
          summary: this.summary,
          matching: () =>
            allPages(async (cursor) => {
              const page = await readPage(this.dashboard.api, this.scope, this.filter, {
                limit: 100,
                ...(cursor === undefined ? {} : { cursor }),
              });
              return { ...page, rows: page.rows as unknown as Array<Record<string, unknown>> };
            }),
        },
        this.matched,
      ),
    );
  }

  private async renderResults(): Promise<void> {
    const scope = this.scope;
    const stillNewest = this.reads.begin();
    try {
      const page = await readPage(this.dashboard.api, scope, this.filter, {
        limit: PAGE,
        ...(this.pager.cursor === undefined ? {} : { cursor: this.pager.cursor }),
      });
      if (!stillNewest()) return;
      this.pager.seen(page.cursor.next);
      this.matched = page.matched;
      this.renderBar();
      const rows = (page.rows as unknown as Array<Record<string, unknown>>).map((data) => {
        const row: Row = { id: idOf(scope, data), scope, data };
        learnZone(String(data.automationId), data.timezone as string | null);
        return el(
          'tr',
          { 'data-testid': `found-${row.id}`, 'data-state': String(data.state ?? data.lifecycleState) },
          el('td', {}, this.dashboard.canAct && this.selection.checkbox('find', row.id, data, () => this.renderBar())),
          ...cells(this.dashboard, row),
        );
      });
      fill(
        this.results,
        rows.length === 0
          ? el('p', { class: 'muted', 'data-testid': 'find-nothing' }, `No ${scope} match.`)
          : table(`find-${scope}`, HEADERS[scope], rows),
        this.pager.controls(rows.length, page.matched),
      );
    } catch (error) {
      if (stillNewest())
        fill(this.results, el('p', { class: 'not-verified', 'data-testid': 'find-refused' }, failureText(error)));
    }
  }

  /** Re-reads the page shown and the charts (the filter and the page stay). */
  async render(): Promise<void> {
    await Promise.all([this.renderResults(), this.charts.render(this.filter)]);
  }
}
