import { DaemonApi } from './api.js';
import type { Dashboard } from './context.js';
import { renderDefinitions } from './definitions.js';
import { DefinitionEditor } from './definition-editor.js';
import { renderDoctor } from './doctor.js';
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

/** Coalesces refresh requests: at most one re-read runs, and one more follows if asked for meanwhile. */
function refresher(read: () => Promise<void>): () => void {
  let timer: number | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const run = (): void => {
    timer = undefined;
    if (running !== undefined) {
      again = true;
      return;
    }
    running = read().finally(() => {
      running = undefined;
      byId('definitions').dataset.refreshedAt = String(Date.now());
      if (again) {
        again = false;
        run();
      }
    });
  };
  return () => {
    if (timer === undefined) timer = window.setTimeout(run, REFRESH_DEBOUNCE_MS);
  };
}

function start(): void {
  const api = new DaemonApi(takeToken());
  let view: View = 'all';
  let selected: string | undefined;
  const message = byId('message');
  const authority = byId('authority');
  authority.textContent = api.hasToken ? 'operator (token)' : 'read-only (no token)';
  authority.className = `badge ${api.hasToken ? 'ok' : 'warn'}`;

  const dashboard: Dashboard = {
    api,
    notify(text, kind) {
      message.hidden = false;
      message.textContent = text;
      message.className = kind;
    },
    refresh: () => refresh(),
    select(occurrenceId) {
      selected = occurrenceId;
      void detail.render(selected);
    },
  };
  const detail = new OccurrenceDetail(dashboard, byId('occurrence-detail'));
  const machines = new MachineView(dashboard, byId('machine-view'));
  const chart = new StatechartPanel(dashboard, byId('statechart'));
  const editor = new DefinitionEditor(dashboard, byId('definition-editor'));
  const chooseView = (next: View): void => {
    view = next;
    renderViews(byId('views'), view, chooseView);
    void renderOccurrences(dashboard, byId('occurrences'), view);
  };
  const refresh = refresher(async () => {
    await Promise.all([
      renderDefinitions(dashboard, byId('definitions')),
      renderOccurrences(dashboard, byId('occurrences'), view),
      detail.render(selected),
      renderDoctor(dashboard, byId('doctor')),
      machines.refresh(),
      chart.refresh(),
      editor.refresh(),
    ]);
  });
  renderViews(byId('views'), view, chooseView);
  refresh();
  new LiveFeed({ api, list: byId('feed'), status: byId('live'), onEvent: () => refresh() }).connect();
}

start();
