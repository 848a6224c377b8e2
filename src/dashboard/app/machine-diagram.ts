import { diagrams, machines, type SpecMachine, type SpecTransition } from 'virtual:coven-machines';

export type Entity = SpecMachine['entity'];
export const ENTITIES: readonly Entity[] = ['definition', 'occurrence', 'run', 'attempt'];

/** The contract machine of an entity kind (spec/coven-automations/v1/state-machines.json). */
export function machineOf(entity: Entity): SpecMachine {
  const machine = machines.find((m) => m.entity === entity);
  if (machine === undefined) throw new Error(`the page bundles no machine for ${entity}`);
  return machine;
}

/**
 * The spec transition a committed move took: the one from `from` to `to` on `hint` (the event the engine
 * recorded as the move's reason), else the only one between those states; undefined for a move the machine
 * draws no edge for (a creation, or a definition revised in place).
 */
export function transitionOf(
  machine: SpecMachine,
  from: string,
  to: string,
  hint: string | undefined,
): SpecTransition | undefined {
  const candidates = machine.transitions.filter((t) => t.from === from && t.to === to);
  return candidates.find((t) => t.on === hint) ?? (candidates.length === 1 ? candidates[0] : undefined);
}

/** A machine's drawing, with its states' and transitions' SVG groups found by what they stand for. */
export interface Diagram {
  svg: SVGSVGElement;
  node(state: string): SVGGElement | undefined;
  edge(transition: SpecTransition): SVGGElement | undefined;
}

/** Graphviz titles an edge `from->to`; its label is the transition's `event (actor)[ guarded]`. */
function edgeKey(from: string, to: string, on: string): string {
  return `${from}->${to}:${on}`;
}

/**
 * A fresh copy of an entity's machine drawing. The SVG is the build's own (Graphviz's layout of the spec,
 * bundled by the page), parsed as XML and never as HTML, so nothing the daemon returns reaches it as markup.
 * Every state node carries `data-state`, every transition edge `data-transition="from->to:event"`.
 */
export function drawMachine(entity: Entity): Diagram {
  const parsed = new DOMParser().parseFromString(diagrams[entity] ?? '', 'image/svg+xml');
  const svg = document.importNode(parsed.documentElement, true) as unknown as SVGSVGElement;
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('class', 'machine-diagram');
  svg.setAttribute('data-machine', machineOf(entity).id);
  const nodes = new Map<string, SVGGElement>();
  const edges = new Map<string, SVGGElement>();
  for (const group of svg.querySelectorAll<SVGGElement>('g.node')) {
    const state = group.querySelector('title')?.textContent ?? '';
    if (state === '__start') continue;
    group.dataset.state = state;
    nodes.set(state, group);
  }
  for (const group of svg.querySelectorAll<SVGGElement>('g.edge')) {
    const [from, to] = (group.querySelector('title')?.textContent ?? '').split('->');
    const on = (group.querySelector('text')?.textContent ?? '').split(' ')[0] ?? '';
    if (from === undefined || to === undefined || from === '__start') continue;
    group.dataset.transition = edgeKey(from, to, on);
    edges.set(edgeKey(from, to, on), group);
  }
  return {
    svg,
    node: (state) => nodes.get(state),
    edge: (t) => edges.get(edgeKey(t.from, t.to, t.on)),
  };
}

/** Adds a small text line above a state's box (the machine-wide view's count). */
export function annotate(node: SVGGElement, text: string): void {
  const shape = node.querySelector('path, polygon, ellipse');
  const label = node.querySelector('text');
  if (shape === null || label === null) return;
  const box = (shape as SVGGraphicsElement).getBBox();
  const note = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  note.setAttribute('x', String(box.x + box.width / 2));
  note.setAttribute('y', String(box.y - 4));
  note.setAttribute('text-anchor', 'middle');
  note.setAttribute('class', 'state-count');
  note.textContent = text;
  node.append(note);
}
