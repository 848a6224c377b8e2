import { AttemptState, RunState } from '../../../machines/states.js';
import { act, failureText, type Dashboard } from './context.js';
import { readPage, type ConsoleRun, type Filter } from './console-api.js';
import { el, fill, instant, stateBadge, table } from './dom.js';
import { exitSummary } from './failure-panel.js';
import { CursorPager } from './pager.js';
import { allPages, bulkBar, Selection, type BulkVerb, type NotApplicable } from './selection.js';
import type { BulkItem } from './bulk.js';
import { NewestRead } from './newest-read.js';
import { learnZone } from './zones.js';

/** The failure kinds the view lists: runs held for an operator retry, and runs that ended failing. */
const KINDS: Record<string, string> = {
  'held,failed,timed_out,ambiguous': 'held or failed',
  held: 'held for retry',
  failed: 'failed',
  timed_out: 'timed out',
  ambiguous: 'ambiguous',
};

const PAGE = 20;
/** Attempt states a retry may follow (the engine judges the rest; its refusal is shown). */
const RETRYABLE = new Set<string>([AttemptState.failed, AttemptState.timed_out, AttemptState.cancelled]);

/** attempt.retry.v1 for a run's latest attempt, when that attempt ended in a way a retry follows. */
export function retryItem(run: ConsoleRun): BulkItem | NotApplicable {
  const latest = run.latestAttempt;
  if (latest === null || !RETRYABLE.has(latest.state))
    return {
      id: run.runId,
      refusal: `run ${run.state}: its latest attempt is ${latest?.state ?? 'missing'}, no retry follows`,
    };
  return {
    id: run.runId,
    command: 'attempt.retry.v1',
    payload: { runId: run.runId, priorAttemptNumber: latest.attemptNumber, priorDisposition: latest.state },
  };
}

/** occurrence.cancel.v1 for the occurrence a run belongs to. */
export const cancelRunItem = (run: ConsoleRun): BulkItem => ({
  id: run.occurrenceId,
  command: 'occurrence.cancel.v1',
  payload: { occurrenceId: run.occurrenceId, reason: 'cancelled from the dashboard' },
});

export const RUN_VERBS: Array<BulkVerb<ConsoleRun>> = [
  { verb: 'retry', item: retryItem },
  { verb: 'cancel', item: cancelRunItem },
];

function failureCell(run: ConsoleRun): HTMLElement {
  const f = run.failure;
  return el(
    'div',
    {},
    f === undefined
      ? el('span', { class: 'muted' }, run.latestAttempt ? `attempt ${run.latestAttempt.attemptNumber}` : 'no attempt')
      : el('strong', { 'data-testid': 'exit' }, `attempt ${f.attemptNumber}: ${exitSummary(f)}`),
    f?.errorMessage === undefined ? null : el('div', { 'data-testid': 'error' }, f.errorMessage),
    f?.outputTail === undefined
      ? null
      : el('pre', { class: 'output tail', 'data-testid': 'output-tail' }, f.outputTail),
  );
}

function rowActions(dashboard: Dashboard, run: ConsoleRun): HTMLElement | null {
  if (!dashboard.canAct) return null;
  const retry = retryItem(run);
  const send = (verb: string, item: BulkItem) => void act(dashboard, `${verb} ${item.id}`, item.command, item.payload);
  return el(
    'span',
    {},
    'refusal' in retry || run.hold === undefined
      ? null
      : el('button', { 'data-testid': `failures-retry-${run.runId}`, onclick: () => send('retry', retry) }, 'retry'),
    run.state === RunState.running || run.hold !== undefined
      ? el(
          'button',
          { 'data-testid': `failures-cancel-${run.runId}`, onclick: () => send('cancel', cancelRunItem(run)) },
          'cancel',
        )
      : null,
  );
}

/**
 * Failed and held runs, newest first, one page at a time: each with its error, exit code, output tail and (held)
 * until when it waits; retry and cancel per run, and in bulk over the ticked runs or every run matching.
 */
export class FailuresView {
  private readonly pager = new CursorPager('failures', () => void this.render());
  private readonly selection = new Selection<ConsoleRun>();
  private readonly summary = el('div', { 'data-testid': 'failures-bulk-result' });
  private readonly bar = el('div');
  private kind = Object.keys(KINDS)[0]!;
  private matched = 0;
  private readonly reads = new NewestRead();

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {}

  private filter(): Filter {
    return { state: this.kind };
  }

  private kindPicker(): HTMLElement {
    const select = el(
      'select',
      { 'data-testid': 'failures-kind', 'aria-label': 'which failures' },
      ...Object.entries(KINDS).map(([value, label]) => el('option', { value, selected: value === this.kind }, label)),
    );
    select.addEventListener('change', () => {
      this.kind = select.value;
      this.pager.reset();
      this.selection.clear();
      void this.render();
    });
    return select;
  }

  private renderBar(): void {
    fill(
      this.bar,
      bulkBar(
        this.dashboard,
        {
          name: 'failures',
          verbs: RUN_VERBS,
          selection: this.selection,
          summary: this.summary,
          matching: () =>
            allPages((cursor) =>
              readPage(this.dashboard.api, 'runs', this.filter(), { limit: 100, ...(cursor ? { cursor } : {}) }),
            ),
        },
        this.matched,
      ),
    );
  }

  private row(run: ConsoleRun): HTMLTableRowElement {
    learnZone(run.automationId, run.timezone);
    const zone = { timezone: run.timezone ?? undefined };
    return el(
      'tr',
      { 'data-testid': `failed-run-${run.runId}`, 'data-held': String(run.hold !== undefined) },
      el(
        'td',
        {},
        this.dashboard.canAct && this.selection.checkbox('failures', run.runId, run, () => this.renderBar()),
      ),
      el(
        'td',
        {},
        el('code', {}, run.runId),
        el('div', { class: 'muted mono' }, run.automationId),
        el('button', { onclick: () => this.dashboard.select(run.occurrenceId) }, 'open'),
      ),
      el('td', {}, run.hold === undefined ? stateBadge(run.state) : stateBadge('held')),
      el('td', {}, failureCell(run)),
      el(
        'td',
        { 'data-testid': 'held-until' },
        run.hold === undefined ? el('span', { class: 'muted' }, '—') : instant(run.hold.until, zone),
        el('div', { class: 'muted' }, 'started ', instant(run.startedAt, zone)),
      ),
      el('td', {}, rowActions(this.dashboard, run)),
    );
  }

  async render(): Promise<void> {
    const stillNewest = this.reads.begin();
    try {
      const page = await readPage(this.dashboard.api, 'runs', this.filter(), {
        limit: PAGE,
        ...(this.pager.cursor === undefined ? {} : { cursor: this.pager.cursor }),
      });
      if (!stillNewest()) return;
      this.pager.seen(page.cursor.next);
      this.matched = page.matched;
      this.renderBar();
      fill(
        this.target,
        el('div', { class: 'toolbar' }, this.kindPicker(), this.bar),
        this.summary,
        page.rows.length === 0
          ? el('p', { class: 'muted', 'data-testid': 'no-failures' }, 'No failed or held runs.')
          : table(
              'failures-table',
              ['', 'run', 'state', 'error · exit · output', 'held until', 'actions'],
              [...page.rows.map((run) => this.row(run))],
            ),
        this.pager.controls(page.rows.length, page.matched),
      );
    } catch (error) {
      if (stillNewest())
        fill(this.target, el('p', { class: 'not-verified' }, `failures unavailable: ${failureText(error)}`));
    }
  }
}
