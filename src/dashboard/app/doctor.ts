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

/** The doctor's findings (`GET /api/v1/doctor`), or "doctor unavailable" when the daemon does not serve one. */
export async function renderDoctor(dashboard: Dashboard, target: HTMLElement): Promise<void> {
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
