import { failureText, type Dashboard } from './context.js';
import { el, fill, stateBadge, table } from './dom.js';
import { annotate, drawMachine, ENTITIES, machineOf, type Entity } from './machine-diagram.js';
import { zoned } from './zoned.js';
import { NewestRead } from './newest-read.js';

/** One machine's counts, as `GET /api/v1/machines/counts` answers them. */
interface MachineCount {
  machine: string;
  byState: Record<string, number>;
  live: number;
  truncated: boolean;
  source: string;
}

interface Counts {
  asOf: string;
  machines: MachineCount[];
}

function countRows(machine: MachineCount): HTMLTableRowElement[] {
  return Object.entries(machine.byState).map(([state, n]) =>
    el(
      'tr',
      { 'data-testid': `count-${state}`, 'data-count': String(n) },
      el('td', {}, stateBadge(state)),
      el('td', { class: 'num' }, n),
    ),
  );
}

/**
 * The machine-wide view: one contract machine drawn with how many live entities sit in each of its
 * non-terminal states (the daemon counts them from its live indexes, never the whole history), the states
 * holding some shaded. Terminal states are settled history and carry no count. Re-read on every changefeed
 * event the page receives.
 */
export class MachineView {
  private readonly reads = new NewestRead();
  private entity: Entity = 'occurrence';

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {}

  choose(entity: Entity): Promise<void> {
    this.entity = entity;
    return this.refresh();
  }

  async refresh(): Promise<void> {
    let counts: Counts | undefined;
    const stillNewest = this.reads.begin();
    try {
      counts = await this.dashboard.api.get<Counts>('/api/v1/machines/counts');
    } catch (error) {
      if (!stillNewest()) return;
      return fill(this.target, el('p', { class: 'not-verified' }, `counts unavailable: ${failureText(error)}`));
    }
    if (!stillNewest()) return;
    if (counts === undefined)
      return fill(this.target, el('p', { class: 'muted' }, 'this daemon serves no machine counts'));
    const machine = counts.machines.find((m) => m.machine === machineOf(this.entity).id);
    const tabs = el(
      'nav',
      { 'aria-label': 'machines' },
      ...ENTITIES.map((entity) =>
        el(
          'button',
          {
            'data-testid': `machine-${entity}`,
            'aria-pressed': String(entity === this.entity),
            onclick: () => void this.choose(entity),
          },
          machineOf(entity).id,
        ),
      ),
    );
    const diagram = drawMachine(this.entity);
    const body = el(
      'div',
      {
        class: 'statechart',
        'data-testid': 'machine-counts',
        'data-machine': machine?.machine ?? '',
        'data-live': String(machine?.live ?? 0),
      },
      el(
        'p',
        { class: 'muted' },
        `${machine?.live ?? 0} live, as of `,
        zoned(counts.asOf),
        ` · from the ${machine?.source ?? '—'}`,
        machine?.truncated ? ' · more than the daemon counts at once: the first 20,000 only' : '',
      ),
      el('div', { class: 'diagram' }, diagram.svg),
      machine === undefined ? null : table('counts-table', ['state', 'live'], countRows(machine)),
    );
    fill(this.target, tabs, body);
    // Counts go on the drawing once it is laid out in the page (a box's size is known only then).
    for (const [state, n] of Object.entries(machine?.byState ?? {})) {
      const node = diagram.node(state);
      if (node === undefined) continue;
      if (n > 0) node.classList.add('occupied');
      annotate(node, String(n));
    }
  }
}
