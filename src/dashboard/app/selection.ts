import type { Dashboard } from './context.js';
import { el, fill } from './dom.js';
import { bulkSummary, MAX_BULK, runBulk, summaryLine, type BulkItem, type BulkOutcome } from './bulk.js';

/** A row the verb does not apply to, and why: it is reported as refused, and nothing is sent for it. */
export interface NotApplicable {
  id: string;
  refusal: string;
}

/** A bulk verb of a panel: its name and the command it sends for one row. */
export interface BulkVerb<T> {
  verb: string;
  item(row: T): BulkItem | NotApplicable;
}

/** The rows an operator ticked, by id, kept across the panel's live refreshes and pages. */
export class Selection<T> {
  private readonly chosen = new Map<string, T>();

  get size(): number {
    return this.chosen.size;
  }

  rows(): T[] {
    return [...this.chosen.values()];
  }

  clear(): void {
    this.chosen.clear();
  }

  /** The row's tick box. */
  checkbox(name: string, id: string, row: T, changed: () => void): HTMLInputElement {
    const box = el('input', {
      type: 'checkbox',
      'data-testid': `select-${name}-${id}`,
      'aria-label': `select ${id}`,
      checked: this.chosen.has(id),
    });
    box.addEventListener('change', () => {
      if (box.checked) this.chosen.set(id, row);
      else this.chosen.delete(id);
      changed();
    });
    return box;
  }
}

export interface BulkBarOptions<T> {
  name: string;
  verbs: Array<BulkVerb<T>>;
  selection: Selection<T>;
  /** Every row the panel's filter matches (all pages), at most {@link MAX_BULK}; `matched` is how many in all. */
  matching(): Promise<{ rows: T[]; matched: number }>;
  /** Where the summary of the last bulk action stays (kept by the panel across refreshes). */
  summary: HTMLElement;
}

async function act<T>(dashboard: Dashboard, options: BulkBarOptions<T>, verb: BulkVerb<T>, rows: T[]) {
  const planned = rows.map((row) => verb.item(row));
  const items = planned.filter((item): item is BulkItem => !('refusal' in item));
  fill(options.summary, el('span', { class: 'muted' }, `${verb.verb}: sending ${items.length} commands…`));
  const sent = await runBulk(dashboard, verb.verb, items);
  const outcomes = planned.map((item): BulkOutcome => {
    if (!('refusal' in item)) return sent.shift()!;
    return { id: item.id, adoptionKey: 'not sent', outcome: 'refused', detail: item.refusal };
  });
  fill(options.summary, bulkSummary(verb.verb, outcomes));
  const refused = outcomes.some((o) => o.outcome === 'refused');
  dashboard.notify(summaryLine(verb.verb, outcomes), refused ? 'error' : 'ok');
  options.selection.clear();
  dashboard.refresh();
}

/** "Every match" asks once more, naming how many entities it will touch, before anything is sent. */
async function confirmMatching<T>(dashboard: Dashboard, options: BulkBarOptions<T>, verb: BulkVerb<T>) {
  fill(options.summary, el('span', { class: 'muted' }, 'collecting the matches…'));
  const { rows, matched } = await options.matching();
  if (matched > MAX_BULK) {
    fill(options.summary);
    dashboard.notify(
      `${verb.verb}: ${matched} match; a bulk action takes at most ${MAX_BULK} — narrow the filter`,
      'error',
    );
    return;
  }
  fill(
    options.summary,
    el(
      'button',
      { 'data-testid': `${options.name}-bulk-confirm`, onclick: () => void act(dashboard, options, verb, rows) },
      `confirm: ${verb.verb} all ${rows.length} matching`,
    ),
    el('button', { 'data-testid': `${options.name}-bulk-dismiss`, onclick: () => fill(options.summary) }, 'dismiss'),
  );
}

/** The bulk buttons of a panel: each verb over the ticked rows, and over every row the filter matches. */
export function bulkBar<T>(dashboard: Dashboard, options: BulkBarOptions<T>, matched: number): HTMLElement | null {
  if (!dashboard.canAct) return null;
  const selected = options.selection.size;
  return el(
    'div',
    { class: 'bulk', 'data-testid': `${options.name}-bulk` },
    el('span', { class: 'muted' }, `${selected} selected · `),
    ...options.verbs.flatMap((verb) => [
      el(
        'button',
        {
          'data-testid': `${options.name}-bulk-${verb.verb}-selected`,
          disabled: selected === 0,
          onclick: () => void act(dashboard, options, verb, options.selection.rows()),
        },
        `${verb.verb} selected`,
      ),
      el(
        'button',
        {
          'data-testid': `${options.name}-bulk-${verb.verb}-matching`,
          disabled: matched === 0,
          onclick: () => void confirmMatching(dashboard, options, verb),
        },
        `${verb.verb} all ${matched} matching`,
      ),
    ]),
  );
}

/** Reads every page of a filter (100 rows a page) until the end, or until more than {@link MAX_BULK} matched. */
export async function allPages<T>(
  read: (cursor: string | undefined) => Promise<{ rows: T[]; matched: number; cursor: { next?: string } }>,
): Promise<{ rows: T[]; matched: number }> {
  const rows: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await read(cursor);
    if (page.matched > MAX_BULK) return { rows: [], matched: page.matched };
    rows.push(...page.rows);
    if (page.cursor.next === undefined) return { rows, matched: page.matched };
    cursor = page.cursor.next;
  }
}
