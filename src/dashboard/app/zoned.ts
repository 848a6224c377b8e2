import { el } from './dom.js';

/** The IANA name for a contract timezone (`utc` is the contract's spelling of UTC). */
export const ianaZone = (zone: string): string => (zone === 'utc' ? 'UTC' : zone);

/** `2026-03-02 09:00:05 CET` in `zone` (the viewer's own when none is named). */
export function wallTime(iso: string, zone?: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    ...(zone === undefined ? {} : { timeZone: ianaZone(zone) }),
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(new Date(iso));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  const time = `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}:${part('second')}`;
  return `${time} ${part('timeZoneName')}`;
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
