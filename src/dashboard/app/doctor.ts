import { el, fill, instant } from './dom.js';
import { failureText, type Dashboard } from './context.js';

interface Finding {
  code: string;
  severity: 'info' | 'warning' | 'error';
  subjectIds: string[];
  observed: string;
  safeNextSteps: string[];
}

interface DoctorReport {
  generatedAt: string;
  ok: boolean;
  findings: Finding[];
  counts?: Record<string, number>;
}

function findingItem(f: Finding): HTMLLIElement {
  return el(
    'li',
    { 'data-testid': `finding-${f.code}`, class: `severity-${f.severity}` },
    el('strong', {}, `${f.severity} ${f.code}`),
    f.subjectIds.length === 0 ? '' : el('span', { class: 'mono' }, ` [${f.subjectIds.join(', ')}]`),
    el('div', {}, f.observed),
    ...f.safeNextSteps.map((step) => el('div', { class: 'muted mono' }, `→ ${step}`)),
  );
}

/**
 * The doctor's panel: a button that asks for its findings. The doctor judges every record the store holds, so
 * the page asks only when the operator does, never on a refresh (a loaded store would be read whole each time).
 */
export function showDoctor(dashboard: Dashboard, target: HTMLElement): void {
  const check = el('button', { 'data-testid': 'doctor-run', onclick: () => void run() }, 'run the doctor');
  const report = el('div', { 'data-testid': 'doctor-report' });
  const run = async () => {
    check.setAttribute('disabled', '');
    fill(report, el('p', { class: 'muted' }, 'reading the whole store…'));
    await renderDoctor(dashboard, report);
    check.removeAttribute('disabled');
  };
  fill(target, el('p', { class: 'muted' }, 'Reads every record once: ', check), report);
}

/** The doctor's findings (`GET /api/v1/doctor`), or "doctor unavailable" when the daemon does not serve one. */
async function renderDoctor(dashboard: Dashboard, target: HTMLElement): Promise<void> {
  try {
    const report = await dashboard.api.get<DoctorReport>('/api/v1/doctor');
    if (report === undefined)
      return fill(target, el('p', { class: 'muted', 'data-testid': 'doctor-unavailable' }, 'doctor unavailable'));
    const counts = Object.entries(report.counts ?? {}).map(([name, n]) => `${name} ${n}`);
    fill(
      target,
      el(
        'p',
        { class: report.ok ? 'verified' : 'not-verified', 'data-testid': 'doctor-ok', 'data-ok': String(report.ok) },
        report.ok ? 'ok' : 'needs attention',
        el(
          'span',
          { class: 'muted' },
          ' · ',
          instant(report.generatedAt),
          counts.length ? ` · ${counts.join(', ')}` : '',
        ),
      ),
      report.findings.length === 0
        ? el('p', { class: 'muted' }, 'No findings.')
        : el('ul', { class: 'findings' }, ...report.findings.map(findingItem)),
    );
  } catch (error) {
    fill(target, el('p', { class: 'not-verified' }, `doctor unavailable: ${failureText(error)}`));
  }
}
