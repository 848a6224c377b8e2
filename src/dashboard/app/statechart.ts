import { failureText, type Dashboard } from './context.js';
import { el, fill, stateBadge, table } from './dom.js';
import { EntityPath, runOfAttempt, type ChartRef, type PathStep } from './chart-path.js';
import { drawMachine, ENTITIES, machineOf, transitionOf, type Entity } from './machine-diagram.js';
import { zoned } from './zoned.js';

/** The DOM event a chart button sends up the page; the statechart panel opens the entity it names. */
export const CHART_EVENT = 'coven:chart';

/**
 * A button that opens an entity's live statechart in the statechart panel.
 *
 * @example
 * ```ts
 * row.append(chartButton({ entity: 'occurrence', id: 'occ-1' }));
 * ```
 */
export function chartButton(ref: ChartRef, label = 'chart'): HTMLButtonElement {
  const button = el('button', { class: 'chart-button', 'data-testid': `chart-${ref.entity}-${ref.id}` }, label);
  button.addEventListener('click', () =>
    button.dispatchEvent(new CustomEvent<ChartRef>(CHART_EVENT, { detail: ref, bubbles: true })),
  );
  return button;
}

/** The entity's state now, from its own read; undefined when the read has nothing (compacted, tombstoned). */
async function currentState(dashboard: Dashboard, ref: ChartRef): Promise<string | undefined> {
  const api = dashboard.api;
  try {
    if (ref.entity === 'definition')
      return (await api.read<{ lifecycleState: string }>('definition.get.v1', { automationId: ref.id })).lifecycleState;
    if (ref.entity === 'occurrence')
      return (await api.read<{ occurrence: { state: string } }>('occurrence.get.v1', { occurrenceId: ref.id }))
        .occurrence.state;
    const runId = ref.entity === 'run' ? ref.id : (ref.runId ?? runOfAttempt(ref.id));
    const { run } = await api.read<{ run: { state: string; attempts: Array<{ attemptId: string; state: string }> } }>(
      'run.get.v1',
      { runId },
    );
    return ref.entity === 'run' ? run.state : run.attempts.find((a) => a.attemptId === ref.id)?.state;
  } catch {
    return undefined;
  }
}

function stepRow(step: PathStep, index: number): HTMLTableRowElement {
  return el(
    'tr',
    { 'data-testid': 'path-step', 'data-from': step.from, 'data-to': step.to },
    el('td', { class: 'muted' }, index + 1),
    el('td', {}, zoned(step.at)),
    el('td', {}, step.from === 'none' ? '(created)' : stateBadge(step.from), ' → ', stateBadge(step.to)),
    el('td', { class: 'mono' }, step.on),
    el(
      'td',
      {},
      step.actor ?? '—',
      el('div', { class: 'muted mono' }, step.producer, step.adoptionKey ? ` · ${step.adoptionKey}` : ''),
    ),
  );
}

/** Marks the states the path visited, the edges it took (with how often) and the state it is in now. */
function highlight(ref: ChartRef, path: EntityPath, state: string | undefined): SVGSVGElement {
  const diagram = drawMachine(ref.entity);
  const machine = machineOf(ref.entity);
  for (const step of path.steps) {
    diagram.node(step.to)?.classList.add('visited');
    const transition = transitionOf(machine, step.from, step.to, step.on);
    const edge = transition === undefined ? undefined : diagram.edge(transition);
    if (edge === undefined) continue;
    edge.classList.add('taken');
    edge.dataset.taken = String(Number(edge.dataset.taken ?? '0') + 1);
  }
  if (state !== undefined) diagram.node(state)?.classList.add('current');
  return diagram.svg;
}

/** The entity picker: any definition, occurrence, run or attempt by id. */
function picker(open: (ref: ChartRef) => void): HTMLFormElement {
  const kind = el('select', { 'data-testid': 'chart-kind' }, ...ENTITIES.map((e) => el('option', { value: e }, e)));
  const id = el('input', { 'data-testid': 'chart-id', placeholder: 'id', required: true, maxlength: '200' });
  const form = el('form', { class: 'inline' }, kind, id, el('button', { type: 'submit' }, 'draw'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    open({ entity: kind.value as Entity, id: id.value.trim() });
  });
  return form;
}

/**
 * The live statechart of one entity: its machine drawn from the spec, the state it is in now highlighted, the
 * states and transitions its path went through marked, and that path as a table (each move's time, event and
 * actor), read from the entity's changefeed stream. `refresh()` (called on every changefeed event the page
 * receives) reads the stream on from where it stopped.
 */
export class StatechartPanel {
  private path: EntityPath | undefined;
  private state: string | undefined;

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {
    document.addEventListener(CHART_EVENT, (event) => void this.open((event as CustomEvent<ChartRef>).detail));
    this.render();
  }

  async open(ref: ChartRef): Promise<void> {
    this.path = new EntityPath(ref);
    this.state = undefined;
    await this.refresh(true);
    this.target.scrollIntoView({ block: 'nearest' });
  }

  async refresh(force = false): Promise<void> {
    const path = this.path;
    if (path === undefined) return;
    try {
      const [added, state] = await Promise.all([
        path.update(this.dashboard.api),
        currentState(this.dashboard, path.ref),
      ]);
      if (path !== this.path || (!force && added === 0 && state === this.state)) return;
      this.state = state;
      this.render();
    } catch (error) {
      fill(
        this.target,
        picker((ref) => void this.open(ref)),
        el('p', { class: 'not-verified' }, failureText(error)),
      );
    }
  }

  private render(): void {
    const path = this.path;
    if (path === undefined)
      return fill(
        this.target,
        picker((ref) => void this.open(ref)),
        el('p', { class: 'muted' }, 'Open a chart from a definition, occurrence, run or attempt, or name one here.'),
      );
    const { ref } = path;
    const now = this.state ?? path.last;
    fill(
      this.target,
      picker((next) => void this.open(next)),
      el(
        'div',
        { class: 'statechart', 'data-testid': 'entity-chart', 'data-entity': ref.entity, 'data-state': now ?? '' },
        el(
          'h3',
          {},
          `${ref.entity} `,
          el('code', {}, ref.id),
          ` · ${machineOf(ref.entity).id} · now `,
          stateBadge(now),
        ),
        this.state === undefined && path.last !== undefined
          ? el('p', { class: 'muted' }, 'its record is gone (retention); the state shown is where its history ends')
          : null,
        path.compacted ? el('p', { class: 'muted' }, 'earlier history was compacted by retention') : null,
        el('div', { class: 'diagram' }, highlight(ref, path, now)),
        path.steps.length === 0
          ? el('p', { class: 'muted' }, 'No recorded move.')
          : table('path-table', ['#', 'when', 'move', 'event', 'actor'], path.steps.map(stepRow)),
      ),
    );
  }
}
