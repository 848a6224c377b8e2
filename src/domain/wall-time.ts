// The dashboard bundles this file into the page and the CLI uses it too: it imports nothing.

/** The IANA name for a contract timezone (`utc` is the contract's spelling of UTC). */
export const ianaZone = (zone: string): string => (zone.toLowerCase() === 'utc' ? 'UTC' : zone);

/**
 * An instant's wall time in `zone` (the viewer's own when none is named), year first on a 24-hour clock so every
 * reader parses it alike: `time` is `2026-03-02 09:00` (with `seconds`, `09:00:05`), `zoneName` the zone's short
 * name there (`CET`, `GMT+1`). Throws a RangeError for a zone the runtime does not know.
 *
 * @example
 * ```ts
 * wallParts(new Date('2026-03-02T08:00:00Z'), 'Europe/Berlin', false).time; // '2026-03-02 09:00'
 * ```
 */
export function wallParts(date: Date, zone: string | undefined, seconds: boolean): { time: string; zoneName: string } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    ...(zone === undefined ? {} : { timeZone: ianaZone(zone) }),
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(date);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  const minute = `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}`;
  return { time: seconds ? `${minute}:${part('second')}` : minute, zoneName: part('timeZoneName') };
}
