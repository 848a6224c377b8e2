import { FailuresView } from './failures-view.js';
import { CursorPager } from './pager.js';
import { FindPanel } from './search.js';
import { DaemonApi } from './api.js';
import type { Dashboard } from './context.js';
import { renderDefinitions } from './definitions.js';
import { DefinitionEditor } from './definition-editor.js';
import { showDoctor } from './doctor.js';
import { renderLimits } from './limits.js';
import { byId } from './dom.js';
import { LiveFeed } from './feed.js';
import { MachineView } from './machine-view.js';
import { OccurrenceDetail } from './occurrence-detail.js';
import { renderOccurrences, renderViews, type View } from './occurrences.js';
import { StatechartPanel } from './statechart.js';
import './console.css';

/** Changes arrive in bursts (one command commits several events); one re-read serves a burst. */
const REFRESH_DEBOUNCE_MS = 120;

/** Takes the token from `?token=` into memory and out of the address bar (and so out of history and screenshots). */
function takeToken(): string | undefined {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token') ?? undefined;
  if (token !== undefined) {
    url.searchParams.delete('token');
    window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  }
  return token === '' ? undefined : token;
}

/**
 * Coalesces refresh requests: at most one re-read runs, and one more follows if asked for meanwhile, no sooner
 * than the last re-read took (so a busy store under a stream of changes is never read back to back).
 */
function refresher(read: () => Promise<void>): () => void {
  let timer: number | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let lastTook = 0;
  const run = (): void => {
    timer = undefined;
    if (running !== undefined) {
      again = true;
      return;
    }
    const started = performance.now();
    running = read().finally(() => {
      running = undefined;
      lastTook = performance.now() - started;
      byId('definitions').dataset.refreshedAt = String(Date.now());
      if (again) {
        again = false;
        schedule();
      }
    });
  };
  const schedule = (): void => {
    if (timer === undefined) timer = window.setTimeout(run, Math.max(REFRESH_DEBOUNCE_MS, lastTook));
  };
  return schedule;
}

/** The authority badge: operator only with a token the daemon accepted. */
function showAuthority(badge: HTMLElement, authority: string): void {
  const [text, kind] =
    authority === 'operator'
      ? ['operator (token)', 'ok']
      : authority === 'token-refused'
        ? ['token refused — read-only', 'bad']
        : authority === 'unreachable'
          ? ['daemon unreachable — read-only', 'bad']
          : ['read-only (no token)', 'warn'];
  badge.textContent = text;
  badge.className = `badge ${kind}`;
}

/** The message bar: one line, an action's outcome, a request still pending, or a refusal. */
function notifier(message: HTMLElement): Dashboard['notify'] {
  return (text, kind) => {
    message.hidden = false;
    message.textContent = text;
    message.className = kind;
  };
}

const TOKEN_REFUSED =
  'The daemon refused the token this page was opened with: the page is read-only. ' +
  'Open the address `coven-automata start` printed (it carries the current token).';

async function start(): Promise<void> {
  const api = new DaemonApi(takeToken());
  let view: View = 'all';
  let selected: string | undefined;
  const authority = await api.checkToken().catch(() => 'unreachable' as const);
  let canAct = authority === 'operator';
  showAuthority(byId('authority'), authority);

  const dashboard: Dashboard = {
    api,
    get canAct() {
      return canAct;
    },
    notify: notifier(byId('message')),
    refresh: () => refresh(),
    select(occurrenceId) {
      selected = occurrenceId;
      void detail.render(selected);
    },
  };
  if (authority === 'token-refused') dashboard.notify(TOKEN_REFUSED, 'error');
  const occurrencePages = new CursorPager('occurrences', () => refresh());
  const definitionPages = new CursorPager('definitions', () => refresh());
  const failures = new FailuresView(dashboard, byId('failures'));
  const find = new FindPanel(dashboard, byId('find'));
  const detail = new OccurrenceDetail(dashboard, byId('occurrence-detail'));
  const machines = new MachineView(dashboard, byId('machine-view'));
  const chart = new StatechartPanel(dashboard, byId('statechart'));
  const editor = new DefinitionEditor(dashboard, byId('definition-editor'));
  const chooseView = (next: View): void => {
    view = next;
    occurrencePages.reset();
    renderViews(byId('views'), view, chooseView);
    void renderOccurrences(dashboard, byId('occurrences'), view, occurrencePages);
  };
  const refresh = refresher(async () => {
    await Promise.all([
      failures.render(),
      find.render(),
      renderDefinitions(dashboard, byId('definitions'), definitionPages),
      renderOccurrences(dashboard, byId('occurrences'), view, occurrencePages),
      detail.render(selected),
      machines.refresh(),
      chart.refresh(),
      editor.refresh(),
      renderLimits(dashboard, byId('limits')),
    ]);
  });
  renderViews(byId('views'), view, chooseView);
  showDoctor(dashboard, byId('doctor'));
  refresh();
  const onTokenRefused = (): void => {
    canAct = false;
    showAuthority(byId('authority'), 'token-refused');
    refresh();
  };
  await new LiveFeed({ api, list: byId('feed'), status: byId('live'), onEvent: refresh, onTokenRefused }).start();
}

void start();
