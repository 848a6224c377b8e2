import { AttemptState, OccurrenceState, RunState } from '../../../machines/states.js';
import { el, fill, instant, stateBadge, table } from './dom.js';
import { act, failureText, type Dashboard } from './context.js';
import type { OccurrenceRow } from './occurrences.js';
import { verifyReceipt } from './receipt.js';
import { failurePanel, OutputViews, type FailureRow, type HoldRow } from './failure-panel.js';
import { chartButton } from './statechart.js';
import { NewestRead } from './newest-read.js';

interface AttemptRow {
  attemptId: string;
  attemptNumber: number;
  state: string;
  stateReason?: string;
  priorDisposition?: { attemptNumber: number; outcome: string };
  retryClassification?: { classification?: string };
  receipt: { receiptId: string; disposition: string; verified: boolean } | null;
}

interface RunRow {
  runId: string;
  state: string;
  startedAt: string;
  finishedAt?: string;
  receiptRef?: string;
  attempts: AttemptRow[];
  failure?: FailureRow;
  hold?: HoldRow;
}

interface Detail {
  occurrence: OccurrenceRow & { recovery?: { evidence?: string }; activeRunRef?: string };
  runs: RunRow[];
}

const RETRYABLE = new Set<string>([AttemptState.failed, AttemptState.timed_out, AttemptState.cancelled]);

/** Receipt verification, by the daemon and again in this browser over the receipt's own bytes. */
async function receiptCell(dashboard: Dashboard, run: RunRow, attempt: AttemptRow): Promise<HTMLElement | string> {
  if (attempt.receipt === null) return el('span', { class: 'muted' }, 'no receipt yet');
  let browser: string;
  let browserOk = false;
  try {
    const read = await dashboard.api.read<{ receipt: Record<string, unknown> }>('receipt.get.v1', {
      receiptId: attempt.receipt.receiptId,
    });
    const verdict = await verifyReceipt(read.receipt);
    browserOk = verdict.verified;
    browser = verdict.verified ? 'browser ✓' : `browser ✗ (${verdict.actual.slice(0, 12)}…)`;
  } catch (error) {
    browser = `browser: ${failureText(error)}`;
  }
  const verified = attempt.receipt.verified && browserOk;
  return el(
    'span',
    {
      class: verified ? 'verified' : 'not-verified',
      'data-testid': `receipt-${run.runId}-${attempt.attemptNumber}`,
      'data-verified': String(verified),
    },
    verified ? 'receipt verified' : 'receipt NOT verified',
    el('span', { class: 'muted' }, ` (daemon ${attempt.receipt.verified ? '✓' : '✗'}, ${browser})`),
  );
}

function retryButton(dashboard: Dashboard, run: RunRow): HTMLElement | null {
  const latest = run.attempts.at(-1);
  if (!dashboard.canAct) return null;
  if (run.state !== RunState.running || latest === undefined || !RETRYABLE.has(latest.state)) return null;
  return el(
    'button',
    {
      'data-testid': `retry-${run.runId}`,
      onclick: () =>
        void act(dashboard, `retry ${run.runId}`, 'attempt.retry.v1', {
          runId: run.runId,
          priorAttemptNumber: latest.attemptNumber,
          priorDisposition: latest.state,
        }),
    },
    `retry (attempt ${latest.attemptNumber + 1})`,
  );
}

async function attemptRows(dashboard: Dashboard, run: RunRow): Promise<HTMLTableRowElement[]> {
  return Promise.all(
    run.attempts.map(async (a) =>
      el(
        'tr',
        { 'data-testid': `attempt-${a.attemptId}` },
        el(
          'td',
          { class: 'mono' },
          el('code', {}, run.runId),
          el('div', {}, stateBadge(run.state), chartButton({ entity: 'run', id: run.runId })),
        ),
        el(
          'td',
          {},
          `#${a.attemptNumber} `,
          stateBadge(a.state),
          chartButton({ entity: 'attempt', id: a.attemptId, runId: run.runId }),
          a.stateReason ? el('div', { class: 'muted' }, a.stateReason) : null,
        ),
        el(
          'td',
          { class: 'muted' },
          a.retryClassification?.classification ?? '',
          a.priorDisposition ? ` after #${a.priorDisposition.attemptNumber} ${a.priorDisposition.outcome}` : '',
        ),
        el('td', {}, await receiptCell(dashboard, run, a)),
      ),
    ),
  );
}

/** The recover form, kept across refreshes so a half-typed statement survives live updates. */
function recoverForm(dashboard: Dashboard, occurrenceId: string): HTMLFormElement {
  const statement = el('input', {
    name: 'statement',
    required: true,
    maxlength: '1000',
    placeholder: 'what you checked (required)',
    'data-testid': 'recover-statement',
  });
  const determination = el(
    'select',
    { name: 'determination', 'data-testid': 'recover-determination' },
    el('option', { value: 'retry_with_new_attempt' }, 'retry with a new attempt'),
    el('option', { value: 'failed_deterministic' }, 'settle failed (deterministic)'),
  );
  const form = el(
    'form',
    { class: 'inline', 'data-testid': 'recover-form', 'data-occurrence': occurrenceId },
    el('strong', {}, 'recover:'),
    determination,
    statement,
    el('button', { type: 'submit', 'data-testid': 'recover-submit' }, 'recover'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void act(dashboard, `recover ${occurrenceId}`, 'occurrence.recover.v1', {
      occurrenceId,
      evidenceDetermination: determination.value,
      statement: statement.value,
    });
  });
  return form;
}

/**
 * The selected occurrence: its state, slot and fence, how each run that failed failed (with its output on request),
 * its runs and their attempts with receipt verification.
 */
export class OccurrenceDetail {
  private form: HTMLFormElement | undefined;
  private readonly outputs: OutputViews;
  private readonly reads = new NewestRead();

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {
    this.outputs = new OutputViews(dashboard);
  }

  async render(occurrenceId: string | undefined): Promise<void> {
    const stillNewest = this.reads.begin();
    if (occurrenceId === undefined) return fill(this.target);
    let detail: Detail;
    try {
      detail = await this.dashboard.api.read<Detail>('occurrence.get.v1', { occurrenceId });
    } catch (error) {
      if (!stillNewest()) return;
      return fill(this.target, el('p', { class: 'not-verified' }, `occurrence ${occurrenceId}: ${failureText(error)}`));
    }
    // A read that a later one overtook must not touch the recover form either: the later one may have drawn it,
    // with what the operator is typing.
    if (!stillNewest()) return;
    const o = detail.occurrence;
    if (o.state !== OccurrenceState.recovery_required || !this.dashboard.canAct) this.form = undefined;
    else if (this.form?.dataset.occurrence !== occurrenceId) this.form = recoverForm(this.dashboard, occurrenceId);
    const rows = (await Promise.all(detail.runs.map((run) => attemptRows(this.dashboard, run)))).flat();
    if (!stillNewest()) return;
    fill(
      this.target,
      el(
        'div',
        { class: 'detail', 'data-testid': 'detail', 'data-state': o.state },
        el('h3', {}, 'occurrence ', el('code', {}, o.occurrenceId), ' ', stateBadge(o.state)),
        el(
          'p',
          { class: 'muted' },
          `automation ${o.automationId} · slot `,
          instant(o.scheduledFor, o),
          ` · fence generation ${o.fence.generation}`,
          o.recovery?.evidence ? ` · recovery evidence: ${o.recovery.evidence}` : '',
          o.stateReason ? ` · ${o.stateReason}` : '',
        ),
        this.form ?? null,
        ...detail.runs.map((run) =>
          run.failure === undefined
            ? retryButton(this.dashboard, run)
            : failurePanel(run.runId, run.failure, run.hold, this.outputs, retryButton(this.dashboard, run), o),
        ),
        rows.length === 0
          ? el('p', { class: 'muted' }, 'No run yet.')
          : table('runs-table', ['run', 'attempt', 'why', 'receipt'], rows),
        el('button', { onclick: () => this.dashboard.select(undefined) }, 'close'),
      ),
    );
  }
}
