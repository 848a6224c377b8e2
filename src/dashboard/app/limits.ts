import { el, fill, instant } from './dom.js';
import { failureText, type Dashboard } from './context.js';

/** One gate as x-coven-automata.limits.get.v1 answers it (the engine's GateReport). */
interface GateReport {
  key: string;
  inFlight?: { count: number; cap: number };
  rate?: { used: number; limit: number; perMinutes: number; reopensAt: string | null };
  waiting: string[];
  closed: boolean;
}

interface FlowReport {
  revision: number;
  setAt: string | null;
  gates: GateReport[];
}

function gateRow(gate: GateReport): HTMLTableRowElement {
  const rate = gate.rate;
  return el(
    'tr',
    { 'data-testid': `gate-${gate.key}`, class: gate.closed ? 'gate-closed' : '' },
    el('td', { class: 'mono' }, gate.key),
    el('td', {}, gate.inFlight === undefined ? '—' : `${gate.inFlight.count} / ${gate.inFlight.cap}`),
    el(
      'td',
      {},
      rate === undefined ? '—' : `${rate.used} / ${rate.limit} per ${rate.perMinutes} min`,
      rate?.reopensAt ? el('span', { class: 'muted' }, ' · reopens ', instant(rate.reopensAt)) : '',
    ),
    el('td', { 'data-testid': 'gate-waiting' }, String(gate.waiting.length)),
    el('td', {}, gate.closed ? 'full' : 'open'),
  );
}

/**
 * The flow-control panel (docs/flow-control.md): every gate — a runtime's or a tag's cap, a tag's or an
 * automation's rate limit — with what it holds now and how much work waits at it. Work waiting here is held back
 * by policy, not stuck.
 */
export async function renderLimits(dashboard: Dashboard, target: HTMLElement): Promise<void> {
  try {
    const report = await dashboard.api.read<FlowReport>('x-coven-automata.limits.get.v1', {});
    if (report.gates.length === 0)
      return fill(target, el('p', { class: 'muted', 'data-testid': 'limits-none' }, 'No caps or rate limits are set.'));
    const head = ['gate', 'in flight / cap', 'rate window', 'waiting', ''].map((h) => el('th', {}, h));
    fill(
      target,
      el(
        'p',
        { class: 'muted' },
        `limits revision ${report.revision}`,
        report.setAt === null ? '' : el('span', {}, ', set ', instant(report.setAt)),
      ),
      el(
        'table',
        { 'data-testid': 'gates' },
        el('thead', {}, el('tr', {}, ...head)),
        el('tbody', {}, ...report.gates.map(gateRow)),
      ),
    );
  } catch (error) {
    fill(
      target,
      el('p', { class: 'muted', 'data-testid': 'limits-unavailable' }, `limits unavailable: ${failureText(error)}`),
    );
  }
}
