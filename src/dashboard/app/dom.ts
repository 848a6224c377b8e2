import { zonedInstant, zoneOf } from './zones.js';

/** Children an element accepts: nodes, text, or nothing (skipped, so conditionals read naturally). */
export type Child = Node | string | number | null | undefined | false;

/**
 * Builds an element. Text always goes in as text nodes, never as HTML, so nothing the daemon returns (a
 * definition name, an error message) can inject markup.
 *
 * @example
 * ```ts
 * el('button', { 'data-testid': 'pause', onclick: () => pause() }, 'Pause');
 * ```
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | ((event: Event) => void) | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') node.addEventListener(name.replace(/^on/, ''), value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'object' ? child : String(child));
  }
  return node;
}

/** Replaces everything inside `parent`. */
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(typeof child === 'object' ? child : String(child));
  }
}

/** The element with this id; the page's skeleton (index.html) always has it. */
export function byId(id: string): HTMLElement {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`the dashboard page has no #${id}`);
  return node;
}

/** A table with a header row; `rows` already built. */
export function table(testid: string, headers: string[], rows: HTMLTableRowElement[]): HTMLTableElement {
  return el(
    'table',
    { 'data-testid': testid },
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows),
  );
}

/** A state word coloured by its class (`state-running`, …). */
export function stateBadge(state: unknown): HTMLElement {
  const text = typeof state === 'string' ? state : '—';
  return el('span', { class: `state-${text}`, 'data-state': text }, text);
}

/**
 * An instant with its zone named (zones.ts): the viewer's, and the definition's schedule zone when known
 * (`zone`, or the zone a console read named for `automationId`).
 */
export function instant(value: unknown, zone?: { automationId?: string; timezone?: string }): HTMLElement | string {
  const known = zone?.timezone ?? (zone?.automationId === undefined ? undefined : zoneOf(zone.automationId));
  return zonedInstant(value, known);
}
