import { el, instant } from './dom.js';
import { failureText, type Dashboard } from './context.js';

/** A failed attempt as the read commands render it beside a run. */
export interface FailureRow {
  attemptNumber: number;
  failureClass: string;
  exitCode: number | null;
  signal?: string;
  errorMessage?: string;
  outputTail?: string;
  outputTruncated?: boolean;
  reason: string;
}

/** A run held for an operator retry: until when, and the command lines that end the hold. */
export interface HoldRow {
  until: string | null;
  actions: { retry: string; cancel: string };
}

/** `runtime_error, exit 137 (SIGKILL)` */
export function exitSummary(f: FailureRow): string {
  const exit = f.exitCode === null ? '' : `, exit ${f.exitCode}${f.signal === undefined ? '' : ` (${f.signal})`}`;
  return `${f.failureClass}${exit}`;
}

interface OutputPage {
  output: string;
  offset: number;
  size: number;
  available: boolean;
  attemptNumber: number | null;
}

/**
 * The output view of runs, by run id: what `x-coven-automata.run.output.v1` answered when the operator asked, kept
 * across the detail's live refreshes (each refresh would otherwise drop it).
 */
export class OutputViews {
  private readonly shown = new Map<string, HTMLElement>();

  constructor(private readonly dashboard: Dashboard) {}

  private async load(runId: string, into: HTMLElement): Promise<void> {
    into.textContent = 'loading…';
    try {
      const page = await this.dashboard.api.read<OutputPage>('x-coven-automata.run.output.v1', { runId });
      const note = !page.available
        ? 'no output this engine can read'
        : page.offset > 0
          ? `the last ${page.size - page.offset} of ${page.size} bytes`
          : `${page.size} bytes`;
      into.replaceChildren(
        el('div', { class: 'muted' }, `attempt ${String(page.attemptNumber)} output · ${note}`),
        el('pre', { class: 'output', 'data-testid': `logs-${runId}` }, page.output),
      );
    } catch (error) {
      into.textContent = `output of ${runId}: ${failureText(error)}`;
    }
  }

  /** The button that loads the run's output, and the output once loaded. */
  view(runId: string): HTMLElement {
    const known = this.shown.get(runId);
    if (known !== undefined) return known;
    const box = el('div', { 'data-testid': `output-${runId}` });
    box.append(
      el(
        'button',
        {
          'data-testid': `show-output-${runId}`,
          onclick: () => {
            this.shown.set(runId, box);
            void this.load(runId, box);
          },
        },
        'show output',
      ),
    );
    return box;
  }
}

/**
 * What the page shows under a run whose latest attempt failed: the class and exit, the error's message, the end of
 * its output, and for a run held for an operator retry until when and the two command lines that end the hold.
 */
export function failurePanel(
  runId: string,
  failure: FailureRow | undefined,
  hold: HoldRow | undefined,
  output: OutputViews,
  retry: HTMLElement | null,
  zone: { automationId?: string } = {},
): HTMLElement | null {
  if (failure === undefined) return null;
  return el(
    'div',
    { class: 'failure', 'data-testid': `failure-${runId}`, 'data-held': String(hold !== undefined) },
    el('strong', {}, `attempt ${failure.attemptNumber} failed: ${exitSummary(failure)}`),
    failure.errorMessage === undefined ? null : el('div', { 'data-testid': 'failure-error' }, failure.errorMessage),
    el('div', { class: 'muted' }, failure.reason),
    failure.outputTail === undefined
      ? null
      : el('pre', { class: 'output', 'data-testid': 'failure-output' }, failure.outputTail),
    hold === undefined
      ? null
      : el(
          'div',
          { 'data-testid': 'failure-hold' },
          'held for retry until ',
          instant(hold.until, zone),
          retry ?? '',
          el('div', { class: 'mono' }, hold.actions.retry),
          el('div', { class: 'mono' }, hold.actions.cancel),
        ),
    output.view(runId),
  );
}
