import { RRuleTemporal } from 'rrule-temporal';
import { Temporal } from 'temporal-polyfill';
import { WEEKDAYS } from './rrule.js';
import type { WallClock, WallMs } from './wall-clock.js';
import { formRefusals, type WallRule } from './wall-rule.js';

const FREQUENCIES = ['MINUTELY', 'HOURLY', 'DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'];
/** BY* parts and their value ranges; a negative value counts from the end where RFC 5545 allows it. */
const RANGES: Record<string, { min: number; max: number; signed: boolean }> = {
  BYMINUTE: { min: 0, max: 59, signed: false },
  BYHOUR: { min: 0, max: 23, signed: false },
  BYMONTHDAY: { min: 1, max: 31, signed: true },
  BYMONTH: { min: 1, max: 12, signed: false },
  BYYEARDAY: { min: 1, max: 366, signed: true },
  BYWEEKNO: { min: 1, max: 53, signed: true },
  BYSETPOS: { min: 1, max: 366, signed: true },
};
const OTHER_PARTS = ['FREQ', 'INTERVAL', 'COUNT', 'UNTIL', 'BYSECOND', 'BYDAY', 'WKST'];
/** DTSTART when the extension names none: midnight, so a rule's minute and second default to 0. */
const DEFAULT_START = '2000-01-01T00:00:00';

const { malformed, unsupported } = formRefusals('rrule');

function splitParts(rrule: string): Map<string, string> {
  const parts = new Map<string, string>();
  for (const part of rrule.replace(/^RRULE:/i, '').split(';')) {
    const [key, value, extra] = part.split('=');
    if (key === undefined || key === '' || value === undefined || value === '' || extra !== undefined)
      throw malformed(rrule, `part ${JSON.stringify(part)} is not KEY=VALUE`);
    const name = key.toUpperCase();
    if (parts.has(name)) throw malformed(rrule, `${name} appears twice`);
    parts.set(name, value.toUpperCase());
  }
  return parts;
}

function checkNumbers(rrule: string, key: string, value: string): void {
  const { min, max, signed } = RANGES[key]!;
  for (const item of value.split(',')) {
    const match = /^([+-]?)(\d{1,3})$/.exec(item);
    const size = match === null ? NaN : Number(match[2]);
    if (match === null || (match[1] !== '' && !signed) || size < min || size > max)
      throw malformed(rrule, `${key} value ${JSON.stringify(item)} is outside ${signed ? '±' : ''}${min}-${max}`);
  }
}

function checkDays(rrule: string, freq: string, value: string): void {
  for (const item of value.split(',')) {
    const match = /^([+-]?\d{1,2})?([A-Z]{2})$/.exec(item);
    if (match === null || !(WEEKDAYS as readonly string[]).includes(match[2]!))
      throw malformed(rrule, `BYDAY value ${JSON.stringify(item)} is not a weekday`);
    if (match[1] !== undefined && freq !== 'MONTHLY' && freq !== 'YEARLY')
      throw malformed(rrule, 'ordinal weekdays (2MO, -1FR) need FREQ=MONTHLY or FREQ=YEARLY');
    const ordinal = Math.abs(Number(match[1] ?? 1));
    if (ordinal < 1 || ordinal > (freq === 'MONTHLY' ? 5 : 53))
      throw malformed(rrule, `BYDAY value ${JSON.stringify(item)} has no such week`);
  }
}

/** Checks every part's name and values; rrule-temporal itself ignores what it does not know. */
function checkParts(rrule: string, parts: Map<string, string>): string {
  const freq = parts.get('FREQ');
  if (freq === undefined) throw malformed(rrule, 'FREQ is missing');
  if (freq === 'SECONDLY') throw unsupported(rrule, 'rrule.FREQ.SECONDLY', 'the minimum interval is one minute');
  if (!FREQUENCIES.includes(freq)) throw malformed(rrule, `FREQ=${freq} is not a frequency`);
  for (const [key, value] of parts) {
    if (key in RANGES) checkNumbers(rrule, key, value);
    else if (!OTHER_PARTS.includes(key)) throw malformed(rrule, `${key} is not an RFC 5545 rule part`);
  }
  for (const key of ['INTERVAL', 'COUNT'])
    if (parts.has(key) && !/^[1-9]\d{0,5}$/.test(parts.get(key)!)) throw malformed(rrule, `${key} is not 1-999999`);
  if (parts.has('COUNT') && parts.has('UNTIL')) throw malformed(rrule, 'COUNT and UNTIL exclude each other');
  if (parts.has('BYSECOND') && parts.get('BYSECOND') !== '0')
    throw unsupported(rrule, 'rrule.BYSECOND', 'slots are on whole minutes (the minimum interval is one minute)');
  if (parts.has('BYDAY')) checkDays(rrule, freq, parts.get('BYDAY')!);
  // The pairings RFC 5545 (3.3.10) rules out, which the expander would answer with something arbitrary.
  if (parts.has('BYWEEKNO') && freq !== 'YEARLY') throw malformed(rrule, 'BYWEEKNO needs FREQ=YEARLY');
  if (parts.has('BYYEARDAY') && ['DAILY', 'WEEKLY', 'MONTHLY'].includes(freq))
    throw malformed(rrule, `BYYEARDAY is not allowed with FREQ=${freq}`);
  if (parts.has('BYMONTHDAY') && freq === 'WEEKLY')
    throw malformed(rrule, 'BYMONTHDAY is not allowed with FREQ=WEEKLY');
  if (parts.has('WKST') && !(WEEKDAYS as readonly string[]).includes(parts.get('WKST')!))
    throw malformed(rrule, 'WKST is not a weekday');
  return freq;
}

/**
 * UNTIL as the rule is stepped, in wall time read as UTC: a UTC instant (ending in Z, as RFC 5545 asks when the
 * start has a zone) becomes the zone's wall time then; a floating date-time or a date is a wall time already.
 */
function wallUntil(rrule: string, until: string, clock: WallClock): string {
  const match = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/.exec(until);
  if (match === null) throw malformed(rrule, 'UNTIL is not YYYYMMDD or YYYYMMDDTHHMMSS[Z]');
  const [, y, mo, d, h = '23', mi = '59', s = '59', utc] = match;
  let stamp: number;
  try {
    stamp = Temporal.PlainDateTime.from(`${y}-${mo}-${d}T${h}:${mi}:${s}`).toZonedDateTime('UTC').epochMilliseconds;
  } catch {
    throw malformed(rrule, 'UNTIL is not a date');
  }
  const wall = utc === 'Z' ? clock.wallAt(stamp) : stamp;
  return new Date(wall).toISOString().replace(/[-:]|\.\d{3}/g, '');
}

/**
 * A full RFC 5545 rule (FREQ MINUTELY to YEARLY, INTERVAL, the BY* parts, BYSETPOS, COUNT, UNTIL, WKST) stepped
 * in wall time by rrule-temporal, from `dtstart` (a wall time in the zone; midnight on 2000-01-01 when none is
 * given, which phases INTERVAL from then). COUNT needs an explicit `dtstart`: it counts from it. Slots are on
 * whole minutes: SECONDLY and BYSECOND other than 0 are CAPABILITY_UNSUPPORTED.
 *
 * @example
 * ```ts
 * const rule = new RfcRule('FREQ=MINUTELY;INTERVAL=15', new WallClock('Europe/Berlin'));
 * rule.next(Date.parse('2026-03-29T00:50:00Z')); // 2026-03-29T01:00:00Z (a wall time, read in UTC)
 * ```
 */
export class RfcRule implements WallRule {
  private readonly expander: RRuleTemporal;

  constructor(
    readonly rrule: string,
    clock: WallClock,
    dtstart?: string,
  ) {
    const parts = splitParts(rrule);
    checkParts(rrule, parts);
    if (parts.has('COUNT') && dtstart === undefined)
      throw malformed(rrule, 'COUNT counts from dtstart: give the extension a dtstart');
    if (parts.has('UNTIL')) parts.set('UNTIL', wallUntil(rrule, parts.get('UNTIL')!, clock));
    if (dtstart !== undefined && !/T\d{2}:\d{2}(:00)?$/.test(dtstart))
      throw malformed(rrule, 'dtstart is on a whole minute (slots are)');
    const start = new Date(
      Temporal.PlainDateTime.from(dtstart ?? DEFAULT_START).toZonedDateTime('UTC').epochMilliseconds,
    );
    const text = [...parts].map(([key, value]) => `${key}=${value}`).join(';');
    this.expander = new RRuleTemporal({
      rruleString: `DTSTART:${start.toISOString().replace(/[-:]|\.\d{3}/g, '')}\nRRULE:${text}`,
      temporal: Temporal as never,
    });
    if (this.next(start.getTime() - 1) === null) throw malformed(rrule, 'it never matches a date (after dtstart)');
  }

  next(after: WallMs): WallMs | null {
    return this.step(() => this.expander.next(new Date(after), false));
  }

  previous(atOrBefore: WallMs): WallMs | null {
    return this.step(() => this.expander.previous(new Date(atOrBefore), true));
  }

  /** rrule-temporal gives up after 10,000 candidates: a rule that matches nothing that far has no slot. */
  private step(find: () => unknown): WallMs | null {
    try {
      const found = find() as Temporal.ZonedDateTime | null | undefined;
      return found === null || found === undefined ? null : found.epochMilliseconds;
    } catch (error) {
      if (/Maximum iterations/.test((error as Error).message)) return null;
      throw error;
    }
  }
}
