import { DefinitionState } from '../../../machines/states.js';
import type { CursorPager } from './pager.js';
import { learnZone } from './zones.js';
import { alreadyDone, alreadyDoneLine } from '../../domain/lifecycle-done.js';
import { el, fill, instant, stateBadge, table } from './dom.js';
import { act, failureText, type Dashboard } from './context.js';
import { exitSummary, type FailureRow, type HoldRow } from './failure-panel.js';
import { editButton } from './definition-editor.js';
import { chartButton } from './statechart.js';
import { newestReadOf } from './newest-read.js';

interface DefinitionRow {
  automationId: string;
  name: string;
  lifecycleState: string;
  revision: number;
  /** The schedule's zone (the console read names it): the zone the row's times are shown in. */
  timezone?: string;
  /** The schedule as written: the trigger's rule, or the schedule extension's cron expression or rule. */
  schedule?: string;
  /** Overlap and flow-control policies beyond the contract's, in a line. */
  policies?: string;
  /** Health and latest run, when the console read carried them for the whole page at once. */
  health?: Health;
  lastRun?: RunSummary;
}

interface Health {
  nextDueAt: string | null;
  consecutiveFailures: number;
  quarantined: boolean;
  staleReason: string | null;
}

interface RunSummary {
  state: string;
  finishedAt?: string;
  startedAt?: string;
  terminalDisposition?: { failureClass?: string };
  failure?: FailureRow;
  hold?: HoldRow;
}

/** The health and latest run of one definition; tombstoned definitions have neither. */
async function facts(dashboard: Dashboard, row: DefinitionRow): Promise<{ health?: Health; last?: RunSummary }> {
  if (row.lifecycleState === DefinitionState.tombstoned) return {};
  if (row.health !== undefined) return { health: row.health, last: row.lastRun };
  const [health, history] = await Promise.all([
    dashboard.api.read<{ health: Health }>('definition.health.v1', { automationId: row.automationId }),
    dashboard.api.read<{ runs: RunSummary[] }>('run.history.v1', { automationId: row.automationId, limit: 1 }),
  ]);
  return { health: health.health, last: history.runs[0] };
}

function lastResult(last: RunSummary | undefined, zone: { timezone?: string }): HTMLElement | string {
  if (last === undefined) return '—';
  // The contract keeps a run held for an operator retry `running`; its attempt failed, and the page says so.
  if (last.hold !== undefined)
    return el(
      'span',
      { 'data-held': 'true' },
      stateBadge('failed'),
      ', held for retry until ',
      instant(last.hold.until, zone),
      last.failure === undefined ? '' : ` (${exitSummary(last.failure)})`,
    );
  const why = last.failure === undefined ? last.terminalDisposition?.failureClass : exitSummary(last.failure);
  return el(
    'span',
    {},
    stateBadge(last.state),
    why === undefined ? '' : ` (${why})`,
    ' ',
    instant(last.finishedAt ?? last.startedAt, zone),
  );
}

/**
 * A lifecycle button's action. The page may be older than the definition: one already where the command would
 * put it is done, as the CLI reports it, and nothing is sent. Otherwise the command goes at the revision the
 * page shows, so a change the operator has not seen is refused (REVISION_CONFLICT) rather than overridden.
 */
async function lifecycleAction(dashboard: Dashboard, verb: string, command: string, row: DefinitionRow) {
  const id = row.automationId;
  try {
    const now = await dashboard.api.read<{ lifecycleState: string; currentRevision: number }>('definition.get.v1', {
      automationId: id,
    });
    if (alreadyDone(command, now.lifecycleState)) {
      dashboard.notify(alreadyDoneLine(id, command, now.lifecycleState, now.currentRevision), 'ok');
      dashboard.refresh();
      return;
    }
  } catch {
    // An unreadable definition (tombstoned, gone): the command's own refusal says why.
  }
  await act(dashboard, `${verb} ${id}`, command, { automationId: id }, { expectedRevision: row.revision });
}

function actionsFor(dashboard: Dashboard, row: DefinitionRow): HTMLElement | null {
  if (!dashboard.canAct) return null;
  const id = row.automationId;
  const lifecycle = (verb: string, command: string) =>
    el(
      'button',
      { 'data-testid': `${verb}-${id}`, onclick: () => void lifecycleAction(dashboard, verb, command, row) },
      verb,
    );
  return el(
    'span',
    {},
    row.lifecycleState === DefinitionState.active && lifecycle('pause', 'definition.pause.v1'),
    row.lifecycleState === DefinitionState.paused && lifecycle('activate', 'definition.activate.v1'),
    row.lifecycleState === DefinitionState.active &&
      el(
        'button',
        {
          'data-testid': `run-now-${id}`,
          onclick: () => void act(dashboard, `run now ${id}`, 'occurrence.runNow.v1', { automationId: id }),
        },
        'run now',
      ),
    row.lifecycleState !== DefinitionState.tombstoned && editButton(id),
    chartButton({ entity: 'definition', id }),
  );
}

async function rowFor(dashboard: Dashboard, row: DefinitionRow): Promise<HTMLTableRowElement> {
  const { health, last } = await facts(dashboard, row);
  const note =
    health?.staleReason ?? (health && health.consecutiveFailures > 0 ? `${health.consecutiveFailures} failed` : '');
  return el(
    'tr',
    { 'data-testid': `definition-${row.automationId}` },
    el(
      'td',
      {},
      el('code', {}, row.automationId),
      el('div', { class: 'muted' }, row.name),
      row.schedule === undefined
        ? ''
        : el('div', { class: 'muted mono', 'data-testid': 'schedule' }, `${row.schedule} · ${row.timezone ?? 'utc'}`),
      row.policies === undefined ? '' : el('div', { class: 'muted mono', 'data-testid': 'policies' }, row.policies),
    ),
    el('td', {}, stateBadge(row.lifecycleState)),
    el('td', { 'data-testid': 'revision' }, row.revision),
    el('td', { 'data-testid': 'next-run' }, instant(health?.nextDueAt, row)),
    el('td', { 'data-testid': 'last-result' }, lastResult(last, row)),
    el('td', { class: 'muted' }, note),
    el('td', {}, actionsFor(dashboard, row)),
  );
}

/** Definitions per page: each row costs two reads (health, latest run), so a page stays small. */
const PAGE = 20;

/**
 * The definitions panel, one page at a time (`pager` walks the console read's cursor): state, revision, next
 * run, last result and the lifecycle actions.
 */
export async function renderDefinitions(dashboard: Dashboard, target: HTMLElement, pager: CursorPager): Promise<void> {
  const stillNewest = newestReadOf(target).begin();
  try {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (pager.cursor !== undefined) query.set('cursor', pager.cursor);
    const list = await dashboard.api.get<{
      definitions: DefinitionRow[];
      matched: number;
      cursor: { next?: string };
    }>(`/api/v1/console/definitions?${query.toString()}`);
    if (!stillNewest()) return;
    if (list === undefined || list.definitions.length === 0)
      return fill(target, el('p', { class: 'muted' }, 'No definitions yet.'));
    pager.seen(list.cursor.next);
    for (const row of list.definitions) learnZone(row.automationId, row.timezone);
    const rows = await Promise.all(list.definitions.map((row) => rowFor(dashboard, row)));
    if (!stillNewest()) return;
    fill(
      target,
      table('definitions-table', ['automation', 'state', 'rev', 'next run', 'last result', 'note', 'actions'], rows),
      pager.controls(rows.length, list.matched),
    );
  } catch (error) {
    if (stillNewest())
      fill(target, el('p', { class: 'not-verified' }, `definitions unavailable: ${failureText(error)}`));
  }
}
