import { OccurrenceState } from '../../../machines/states.js';
import type { CursorPager } from './pager.js';
import { el, fill, instant, stateBadge, table } from './dom.js';
import { act, failureText, type Dashboard } from './context.js';
import { chartButton } from './statechart.js';
import { newestReadOf } from './newest-read.js';

/** The operator's views (occurrence.list.v1), the scheduler's queues by stage. */
export const VIEWS = ['due', 'eligible', 'claimed', 'running', 'recovery_required', 'all'] as const;
export type View = (typeof VIEWS)[number];

export interface OccurrenceRow {
  occurrenceId: string;
  automationId: string;
  state: string;
  stateReason?: string;
  scheduledFor: string;
  fence: { generation: number; claimedBy?: string; leaseExpiresAt?: string };
  triggerIdentity?: { kind?: string };
}

/** States an operator may ask to cancel (recovery_required is decided by recover instead). */
const CANCELLABLE = new Set<string>([
  OccurrenceState.planned,
  OccurrenceState.eligible,
  OccurrenceState.claimed,
  OccurrenceState.dispatching,
  OccurrenceState.running,
]);

/** The view buttons; the pressed one is the view shown. */
export function renderViews(target: HTMLElement, current: View, choose: (view: View) => void): void {
  fill(
    target,
    ...VIEWS.map((view) =>
      el(
        'button',
        { 'data-testid': `view-${view}`, 'aria-pressed': String(view === current), onclick: () => choose(view) },
        view,
      ),
    ),
  );
}

function rowActions(dashboard: Dashboard, o: OccurrenceRow): HTMLElement {
  return el(
    'span',
    {},
    el('button', { 'data-testid': `open-${o.occurrenceId}`, onclick: () => dashboard.select(o.occurrenceId) }, 'open'),
    chartButton({ entity: 'occurrence', id: o.occurrenceId }),
    CANCELLABLE.has(o.state) &&
      dashboard.canAct &&
      el(
        'button',
        {
          'data-testid': `cancel-${o.occurrenceId}`,
          onclick: () =>
            void act(dashboard, `cancel ${o.occurrenceId}`, 'occurrence.cancel.v1', {
              occurrenceId: o.occurrenceId,
              reason: 'cancelled from the dashboard',
            }),
        },
        'cancel',
      ),
    o.state === OccurrenceState.recovery_required &&
      dashboard.canAct &&
      el(
        'button',
        { 'data-testid': `recover-open-${o.occurrenceId}`, onclick: () => dashboard.select(o.occurrenceId) },
        'recover…',
      ),
  );
}

function rowFor(dashboard: Dashboard, o: OccurrenceRow): HTMLTableRowElement {
  return el(
    'tr',
    { 'data-testid': `occurrence-${o.occurrenceId}`, 'data-state': o.state },
    el('td', {}, el('code', {}, o.occurrenceId)),
    el('td', {}, el('code', {}, o.automationId)),
    el('td', {}, stateBadge(o.state), o.stateReason ? el('div', { class: 'muted' }, o.stateReason) : null),
    el('td', {}, instant(o.scheduledFor, o)),
    el('td', { class: 'mono' }, `gen ${o.fence.generation}`, o.fence.claimedBy ? ` · ${o.fence.claimedBy}` : ''),
    el('td', {}, rowActions(dashboard, o)),
  );
}

/** Occurrences per page of a view. */
const PAGE = 25;

/** The occurrences of one view, newest slot first, one page at a time through occurrence.list.v1's cursor. */
export async function renderOccurrences(
  dashboard: Dashboard,
  target: HTMLElement,
  view: View,
  pager: CursorPager,
): Promise<void> {
  const stillNewest = newestReadOf(target).begin();
  try {
    const page = await dashboard.api.read<{ occurrences: OccurrenceRow[]; cursor?: { next?: string } }>(
      'occurrence.list.v1',
      { view, limit: PAGE, ...(pager.cursor === undefined ? {} : { cursor: pager.cursor }) },
    );
    if (!stillNewest()) return;
    pager.seen(page.cursor?.next);
    if (page.occurrences.length === 0)
      return fill(target, el('p', { class: 'muted', 'data-testid': 'no-occurrences' }, `Nothing in ${view}.`));
    fill(
      target,
      table(
        'occurrences-table',
        ['occurrence', 'automation', 'state', 'slot', 'fence', 'actions'],
        page.occurrences.map((o) => rowFor(dashboard, o)),
      ),
      pager.controls(page.occurrences.length, undefined),
    );
  } catch (error) {
    if (stillNewest())
      fill(target, el('p', { class: 'not-verified' }, `occurrences unavailable: ${failureText(error)}`));
  }
}
