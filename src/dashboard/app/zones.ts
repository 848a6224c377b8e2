import { ianaZone, wallParts } from '../../domain/wall-time.js';

/** The viewer's IANA time zone, as the browser reports it. */
export const viewerZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The schedule zone of each automation, learnt from the console reads that carry it. */
const definitionZones = new Map<string, string>();

/** Remembers the zone an automation's schedule is written in (the console reads name it beside each row). */
export function learnZone(automationId: string, timezone: string | null | undefined): void {
  if (typeof timezone === 'string' && timezone !== '') definitionZones.set(automationId, timezone);
}

/** The zone an automation's schedule is in, once a read has named it. */
export const zoneOf = (automationId: string): string | undefined => definitionZones.get(automationId);

/** `2026-03-02 09:00` in `zone`; undefined for a zone the browser does not know. */
function wallClock(date: Date, zone: string): string | undefined {
  try {
    return wallParts(date, zone, false).time;
  } catch {
    return undefined;
  }
}

/**
 * An instant with its zone named: in the definition's schedule zone when one is given, and in the viewer's
 * zone (once, when the two agree); the exact ISO value on hover.
 *
 * @example
 * ```ts
 * // viewed from Berlin: <time>2026-03-02 09:00 UTC · 10:00 Europe/Berlin (yours)</time>
 * zonedInstant('2026-03-02T09:00:00.000Z', 'utc');
 * ```
 */
export function zonedInstant(value: unknown, definitionZone?: string): HTMLElement | string {
  if (typeof value !== 'string' || value === '') return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const viewer = viewerZone();
  const yours = wallClock(date, viewer) ?? date.toISOString();
  const theirs = definitionZone === undefined ? undefined : wallClock(date, definitionZone);
  let text = `${yours} ${ianaZone(viewer)}`;
  if (theirs !== undefined && theirs === yours) text = `${theirs} ${ianaZone(definitionZone!)} (your zone too)`;
  else if (theirs !== undefined) {
    // The viewer's time without its date when both fall on the same day.
    const short = theirs.slice(0, 10) === yours.slice(0, 10) ? yours.slice(11) : yours;
    text = `${theirs} ${ianaZone(definitionZone!)} · ${short} ${ianaZone(viewer)} (yours)`;
  }
  const node = document.createElement('time');
  node.setAttribute('datetime', value);
  node.setAttribute('title', value);
  node.dataset.zone = definitionZone ?? viewer;
  node.textContent = text;
  return node;
}
