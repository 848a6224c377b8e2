import { ActionError, newAdoptionKey } from './api.js';
import { isCancelPending, type Dashboard } from './context.js';
import { el } from './dom.js';

/** One command of a bulk action: the entity it acts on and the command envelope's parts. */
export interface BulkItem {
  id: string;
  command: string;
  payload: Record<string, unknown>;
  expectedRevision?: number;
}

/** What became of one entity's command. */
export interface BulkOutcome {
  id: string;
  adoptionKey: string;
  outcome: 'committed' | 'replayed' | 'pending' | 'refused';
  detail?: string;
}

/** A bulk action over more than this many entities is refused: narrow the filter instead. */
export const MAX_BULK = 500;
/** Commands in flight at once: the daemon serves other callers meanwhile. */
const IN_FLIGHT = 4;

async function one(dashboard: Dashboard, verb: string, item: BulkItem): Promise<BulkOutcome> {
  const adoptionKey = newAdoptionKey();
  try {
    const response = await dashboard.api.command(item.command, item.payload, {
      adoptionKey,
      statement: `dashboard: bulk ${verb} ${item.id}`,
      ...(item.expectedRevision === undefined ? {} : { expectedRevision: item.expectedRevision }),
    });
    return { id: item.id, adoptionKey, outcome: response.outcome === 'replayed' ? 'replayed' : 'committed' };
  } catch (error) {
    if (isCancelPending(error)) return { id: item.id, adoptionKey, outcome: 'pending' };
    const detail = error instanceof ActionError ? error.message : String(error);
    return { id: item.id, adoptionKey, outcome: 'refused', detail };
  }
}

/**
 * Sends one command per entity, each with its own adoption key (so a retried bulk action replays what already
 * committed rather than doing it twice), a few at a time; answers each entity's outcome in the items' order.
 *
 * @example
 * ```ts
 * const pause = { id: 'a', command: 'definition.pause.v1', payload: { automationId: 'a' }, expectedRevision: 3 };
 * const outcomes = await runBulk(dashboard, 'pause', [pause]);
 * ```
 */
export async function runBulk(dashboard: Dashboard, verb: string, items: BulkItem[]): Promise<BulkOutcome[]> {
  const outcomes: BulkOutcome[] = new Array<BulkOutcome>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      outcomes[index] = await one(dashboard, verb, items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, items.length) }, worker));
  return outcomes;
}

/** `retry 5: 3 committed, 1 pending, 1 refused` */
export function summaryLine(verb: string, outcomes: BulkOutcome[]): string {
  const count = (outcome: BulkOutcome['outcome']) => outcomes.filter((o) => o.outcome === outcome).length;
  const parts = (['committed', 'replayed', 'pending', 'refused'] as const)
    .filter((outcome) => count(outcome) > 0)
    .map((outcome) => `${count(outcome)} ${outcome === 'pending' ? 'pending (cancellation requested)' : outcome}`);
  return `${verb} ${outcomes.length}: ${parts.length === 0 ? 'nothing to do' : parts.join(', ')}`;
}

/** The summary of a bulk action: the counts, each refusal with its reason, and every entity's adoption key. */
export function bulkSummary(verb: string, outcomes: BulkOutcome[]): HTMLElement {
  const refused = outcomes.filter((o) => o.outcome === 'refused');
  return el(
    'div',
    {
      class: refused.length > 0 ? 'bulk-summary refused' : 'bulk-summary',
      'data-testid': 'bulk-summary',
      'data-refused': String(refused.length),
      'data-total': String(outcomes.length),
    },
    el('strong', {}, summaryLine(verb, outcomes)),
    refused.length === 0
      ? null
      : el(
          'ul',
          { 'data-testid': 'bulk-refusals' },
          ...refused.map((o) => el('li', { 'data-id': o.id }, el('code', {}, o.id), ` refused — ${o.detail ?? ''}`)),
        ),
    el(
      'details',
      {},
      el('summary', {}, 'adoption keys'),
      el(
        'ul',
        { class: 'mono' },
        ...outcomes.map((o) =>
          el('li', { 'data-adoption-key': o.adoptionKey }, `${o.id} ${o.outcome} ${o.adoptionKey}`),
        ),
      ),
    ),
  );
}
