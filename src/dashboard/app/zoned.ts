import { el } from './dom.js';
import { wallParts } from '../../domain/wall-time.js';

/** `2026-03-02 09:00:05 CET` in `zone` (the viewer's own when none is named). */
export function wallTime(iso: string, zone?: string): string {
  const { time, zoneName } = wallParts(new Date(iso), zone, true);
  return `${time} ${zoneName}`;
}

/**
 * An instant shown with its zone: in `zone` when given (a definition's), else in the viewer's; the exact UTC
 * value on hover.
 *
 * @example
 * ```ts
 * zoned('2026-03-02T08:00:00.000Z', 'Europe/Berlin'); // <time>2026-03-02 09:00:00 GMT+1</time>
 * ```
 */
export function zoned(iso: string | undefined, zone?: string): HTMLElement | string {
  if (iso === undefined || Number.isNaN(Date.parse(iso))) return '—';
  return el('time', { datetime: iso, title: iso }, wallTime(iso, zone));
}
