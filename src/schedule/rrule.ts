import { ContractError } from '../contract/errors.js';

export const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** The contract's RRULE subset, normalised: slots fire on the hour (minute 0). */
export interface ScheduleRule {
  freq: 'DAILY' | 'WEEKLY';
  byHour: number[];
  /** Only for WEEKLY; empty for DAILY. */
  byDay: Weekday[];
}

/** Defaults from the contract: BYHOUR=9, and BYDAY=MO for weekly rules. */
const DEFAULT_HOUR = 9;
const DEFAULT_DAY: Weekday = 'MO';
const LONG_DAYS: Record<string, Weekday> = {
  MON: 'MO',
  TUE: 'TU',
  WED: 'WE',
  THU: 'TH',
  FRI: 'FR',
  SAT: 'SA',
  SUN: 'SU',
};

const malformed = (rrule: string, why: string) =>
  new ContractError('VALIDATION_FAILED', `rrule ${JSON.stringify(rrule)} is malformed: ${why}`, {
    field: 'trigger.schedule.rrule',
    reason: why,
  });
const unsupported = (rrule: string, variant: string, why: string) =>
  new ContractError(
    'CAPABILITY_UNSUPPORTED',
    `rrule ${JSON.stringify(rrule)} uses ${variant}, which v1 does not execute: ${why}`,
    {
      contractProfile: 'coven.automations.v1',
      variant,
      reason: why,
    },
  );

function uniqueValues(rrule: string, key: string, raw: string): string[] {
  const values = raw.split(',');
  if (values.some((v) => v === '')) throw malformed(rrule, `${key} has an empty value`);
  if (new Set(values).size !== values.length) throw malformed(rrule, `${key} repeats a value`);
  return values;
}

/**
 * Parses the v1 RRULE vocabulary: `FREQ=DAILY|WEEKLY`, optional `BYHOUR` (0–23), and `BYDAY` for weekly
 * rules (MO…SU or MON…SUN). Keys are case-insensitive. Malformed text is `VALIDATION_FAILED`; valid RFC 5545
 * that v1 does not execute (another FREQ, COUNT, INTERVAL, BYDAY on a daily rule…) is `CAPABILITY_UNSUPPORTED`
 * naming the variant.
 *
 * @example
 * ```ts
 * parseRrule('FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8,17'); // { freq: 'WEEKLY', byHour: [8, 17], byDay: ['MO', 'FR'] }
 * ```
 */
export function parseRrule(rrule: string): ScheduleRule {
  const body = rrule.replace(/^RRULE:/i, '');
  if (body.trim() === '') throw malformed(rrule, 'it is empty');
  const parts = new Map<string, string>();
  for (const part of body.split(';')) {
    if (part === '') throw malformed(rrule, 'it has an empty part');
    const eq = part.indexOf('=');
    if (eq <= 0 || eq === part.length - 1) throw malformed(rrule, `part ${JSON.stringify(part)} is not KEY=VALUE`);
    const key = part.slice(0, eq).toUpperCase();
    if (parts.has(key)) throw malformed(rrule, `${key} appears twice`);
    parts.set(key, part.slice(eq + 1));
  }
  const freq = parts.get('FREQ')?.toUpperCase();
  if (freq === undefined) throw malformed(rrule, 'FREQ is missing');
  if (!['SECONDLY', 'MINUTELY', 'HOURLY', 'DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'].includes(freq))
    throw malformed(rrule, `FREQ=${freq} is not a frequency`);
  if (freq !== 'DAILY' && freq !== 'WEEKLY')
    throw unsupported(rrule, `rrule.FREQ.${freq}`, 'only FREQ=DAILY and FREQ=WEEKLY are supported');
  for (const key of parts.keys()) {
    if (key !== 'FREQ' && key !== 'BYHOUR' && key !== 'BYDAY')
      throw unsupported(rrule, `rrule.${key}`, 'only FREQ, BYHOUR and BYDAY are supported');
  }

  const byHourRaw = parts.get('BYHOUR');
  const byHour =
    byHourRaw === undefined
      ? [DEFAULT_HOUR]
      : uniqueValues(rrule, 'BYHOUR', byHourRaw).map((v) => {
          if (!/^\d{1,2}$/.test(v) || Number(v) > 23)
            throw malformed(rrule, `BYHOUR value ${JSON.stringify(v)} is not an hour 0-23`);
          return Number(v);
        });

  const byDayRaw = parts.get('BYDAY');
  if (byDayRaw !== undefined && freq === 'DAILY')
    throw unsupported(rrule, 'rrule.BYDAY.daily', 'BYDAY is supported only on weekly rules');
  const byDay =
    freq === 'DAILY'
      ? []
      : byDayRaw === undefined
        ? [DEFAULT_DAY]
        : uniqueValues(rrule, 'BYDAY', byDayRaw.toUpperCase()).map((v) => {
            if (/^[+-]?\d+[A-Z]{2,3}$/.test(v))
              throw unsupported(rrule, 'rrule.BYDAY.ordinal', 'ordinal weekdays are not supported');
            const day = (WEEKDAYS as readonly string[]).includes(v) ? (v as Weekday) : LONG_DAYS[v];
            if (day === undefined) throw malformed(rrule, `BYDAY value ${JSON.stringify(v)} is not a weekday`);
            return day;
          });
  if (new Set(byDay).size !== byDay.length) throw malformed(rrule, 'BYDAY repeats a day');

  return { freq, byHour: [...byHour].sort((a, b) => a - b), byDay: WEEKDAYS.filter((d) => byDay.includes(d)) };
}

/**
 * Checks a durable timezone: `utc` or an exact IANA TZID known to this runtime. `local` is refused as the
 * `timezone.local.durable` variant: it must be resolved before anything is stored.
 */
export function checkTimezone(timezone: string): void {
  if (timezone === 'utc') return;
  if (timezone.toLowerCase() === 'local') {
    throw new ContractError(
      'CAPABILITY_UNSUPPORTED',
      'timezone "local" is not durable: resolve it to "utc" or an IANA TZID first',
      {
        contractProfile: 'coven.automations.v1',
        variant: 'timezone.local.durable',
        reason: 'local must resolve before persistence',
      },
    );
  }
  let resolved: string | undefined;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    resolved = undefined;
  }
  // Aliases such as Etc/UTC or US/Eastern are IANA names too; a mis-cased spelling (europe/berlin) is not.
  const ianaSpelling = /^[A-Z][A-Za-z0-9_+-]*(\/[A-Z0-9][A-Za-z0-9_+-]*)*$/.test(timezone);
  if (resolved === undefined || !ianaSpelling) {
    throw new ContractError('VALIDATION_FAILED', `timezone ${JSON.stringify(timezone)} is not an exact IANA TZID`, {
      field: 'trigger.schedule.timezone',
    });
  }
}
