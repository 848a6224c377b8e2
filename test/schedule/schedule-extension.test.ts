import fc from 'fast-check';
import { Temporal } from 'temporal-polyfill';
import { describe, expect, test } from 'vitest';
import {
  extensionTrigger,
  makeSchedule,
  SCHEDULE_EXTENSION,
  type ScheduleExtension,
} from '../../src/schedule/schedule-extension.js';
import { propertyParameters } from '../support/property.js';

const scheduleOf = (extension: ScheduleExtension) =>
  makeSchedule({
    trigger: { ...extensionTrigger(extension.timezone) },
    extensions: { [SCHEDULE_EXTENSION]: extension },
  });

const iso = (dates: Array<Date | null>) => dates.map((d) => d?.toISOString() ?? null);
const between = (extension: ScheduleExtension, after: string, until: string) =>
  iso(scheduleOf(extension).slotsBetween(new Date(after), new Date(until)));

/** What a refusal carries: its code and, for CAPABILITY_UNSUPPORTED, the variant. */
function refusal(extension: unknown, trigger = extensionTrigger('utc')): string {
  try {
    makeSchedule({ trigger: { ...trigger }, extensions: { [SCHEDULE_EXTENSION]: extension } });
  } catch (error) {
    const { code, details } = error as { code: string; details?: { variant?: string } };
    return details?.variant === undefined ? code : `${code} ${details.variant}`;
  }
  return 'accepted';
}

describe('the two forms, in a zone with DST (the contract rules: a gap skipped, a fold at its first instant)', () => {
  // Europe/Berlin: 2026-03-29 02:00 CET → 03:00 CEST (gap 02:00–02:59); 2026-10-25 03:00 CEST → 02:00 CET (fold).
  const forms: ScheduleExtension[] = [
    { cron: '*/15 * * * *', timezone: 'Europe/Berlin' },
    { rrule: 'FREQ=MINUTELY;INTERVAL=15', timezone: 'Europe/Berlin' },
  ];
  test.each(forms)('%o skips the spring-forward gap', (extension) => {
    expect(between(extension, '2026-03-29T00:20:00Z', '2026-03-29T01:20:00Z')).toEqual([
      '2026-03-29T00:30:00.000Z', // 01:30 CET
      '2026-03-29T00:45:00.000Z', // 01:45 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: 02:00–02:45 do not exist
      '2026-03-29T01:15:00.000Z',
    ]);
  });
  test.each(forms)('%o runs each wall time of the fall-back fold once, at its first instant', (extension) => {
    expect(between(extension, '2026-10-24T23:50:00Z', '2026-10-25T02:20:00Z')).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T00:15:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T00:45:00.000Z', // 02:45 CEST; 02:00–02:45 CET again are not slots
      '2026-10-25T02:00:00.000Z', // 03:00 CET
      '2026-10-25T02:15:00.000Z',
    ]);
    const schedule = scheduleOf(extension);
    // In the fold's second pass (02:30 CET = 01:30Z) the latest slot is the first pass's 02:45 CEST.
    expect(schedule.latestAtOrBefore(new Date('2026-10-25T01:30:00Z'))?.toISOString()).toBe('2026-10-25T00:45:00.000Z');
    expect(schedule.nextAfter(new Date('2026-10-25T01:30:00Z'))?.toISOString()).toBe('2026-10-25T02:00:00.000Z');
  });
  test('a daily 02:30 is skipped on the day it does not exist and runs once on the day it happens twice', () => {
    const daily: ScheduleExtension[] = [
      { cron: '30 2 * * *', timezone: 'Europe/Berlin' },
      { rrule: 'FREQ=DAILY;BYHOUR=2;BYMINUTE=30', timezone: 'Europe/Berlin' },
    ];
    for (const extension of daily) {
      expect(between(extension, '2026-03-28T00:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
        '2026-03-28T01:30:00.000Z',
        '2026-03-30T00:30:00.000Z',
      ]);
      expect(between(extension, '2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z')).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-26T01:30:00.000Z',
      ]);
    }
  });
});

describe('RFC 5545 rules', () => {
  test('the last weekday of each month at 17:00 New York time (BYSETPOS), across a DST change', () => {
    const extension = {
      rrule: 'FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=17',
      timezone: 'America/New_York',
    };
    expect(between(extension, '2026-12-07T00:00:00Z', '2027-03-31T23:59:00Z')).toEqual([
      '2026-12-31T22:00:00.000Z',
      '2027-01-29T22:00:00.000Z',
      '2027-02-26T22:00:00.000Z',
      '2027-03-31T21:00:00.000Z', // EDT from 2027-03-14
    ]);
  });
  test('COUNT counts from dtstart; UNTIL in UTC ends the rule; INTERVAL is phased from dtstart', () => {
    const counted = { rrule: 'FREQ=DAILY;COUNT=3;BYHOUR=9', dtstart: '2026-12-01T00:00', timezone: 'utc' };
    expect(between(counted, '2026-11-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual([
      '2026-12-01T09:00:00.000Z',
      '2026-12-02T09:00:00.000Z',
      '2026-12-03T09:00:00.000Z',
    ]);
    const until = { rrule: 'FREQ=HOURLY;INTERVAL=6;UNTIL=20261202T120000Z', timezone: 'Europe/Berlin' };
    expect(between(until, '2026-12-01T20:00:00Z', '2026-12-05T00:00:00Z')).toEqual([
      '2026-12-01T23:00:00.000Z', // 00:00 CET
      '2026-12-02T05:00:00.000Z',
      '2026-12-02T11:00:00.000Z', // 12:00 CET; 18:00 CET is after UNTIL (12:00 UTC)
    ]);
    const phased = { rrule: 'FREQ=DAILY;INTERVAL=2', dtstart: '2026-12-02T07:45', timezone: 'utc' };
    expect(between(phased, '2026-12-05T00:00:00Z', '2026-12-09T00:00:00Z')).toEqual([
      '2026-12-06T07:45:00.000Z',
      '2026-12-08T07:45:00.000Z',
    ]);
  });
  test('exdate removes slots, given as wall times in the zone or as instants', () => {
    const extension = {
      cron: '0 9 * * *',
      exdate: ['2026-12-24T09:00', '2026-12-26T08:00:00Z'],
      timezone: 'Europe/Berlin',
    };
    expect(between(extension, '2026-12-23T12:00:00Z', '2026-12-27T12:00:00Z')).toEqual([
      '2026-12-25T08:00:00.000Z',
      '2026-12-27T08:00:00.000Z',
    ]);
  });
  test('a rule past its end has no next slot', () => {
    const done = scheduleOf({ rrule: 'FREQ=DAILY;COUNT=2', dtstart: '2026-01-01T00:00', timezone: 'utc' });
    expect(done.nextAfter(new Date('2026-06-01T00:00:00Z'))).toBeNull();
    expect(done.latestAtOrBefore(new Date('2026-01-05T00:00:00Z'))?.toISOString()).toBe('2026-01-02T00:00:00.000Z');
  });
});

describe('what is refused, and with which code', () => {
  test.each([
    [{ cron: '* * * *', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '61 * * * *', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '0 0 30 2 *', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '@reboot', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '*/5 * * * * *', timezone: 'utc' }, 'CAPABILITY_UNSUPPORTED cron.seconds'],
    [{ cron: '@secondly', timezone: 'utc' }, 'CAPABILITY_UNSUPPORTED cron.seconds'],
    [{ cron: 'H 9 * * *', timezone: 'utc' }, 'CAPABILITY_UNSUPPORTED cron.hash'],
    [{ rrule: 'FREQ=SECONDLY', timezone: 'utc' }, 'CAPABILITY_UNSUPPORTED rrule.FREQ.SECONDLY'],
    [{ rrule: 'FREQ=MINUTELY;BYSECOND=0,30', timezone: 'utc' }, 'CAPABILITY_UNSUPPORTED rrule.BYSECOND'],
    [{ rrule: 'FREQ=DAILY;BYHOUR=24', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY;BYDAY=1MO', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY;COUNT=2', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [
      { rrule: 'FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z', dtstart: '2026-01-01T00:00', timezone: 'utc' },
      'VALIDATION_FAILED',
    ],
    [{ rrule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY;X-NAME=1', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=MONTHLY;BYDAY=0MO', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=MONTHLY;BYDAY=6MO', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=MONTHLY;BYWEEKNO=20', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY;BYYEARDAY=1', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=WEEKLY;BYMONTHDAY=1', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY', dtstart: '2026-01-01T09:00:30', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ rrule: 'FREQ=DAILY;UNTIL=20250101T000000Z', dtstart: '2026-01-01T09:00', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '0 9 * * *', rrule: 'FREQ=DAILY', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '0 9 * * *', dtstart: '2026-01-01T00:00', timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '0 9 * * *', timezone: 'utc', every: 'day' }, 'VALIDATION_FAILED'],
    [{ cron: '0 9 * * *', exdate: ['2026-02-30T09:00'], timezone: 'utc' }, 'VALIDATION_FAILED'],
    [{ cron: '0 9 * * *', timezone: 'local' }, 'CAPABILITY_UNSUPPORTED timezone.local.durable'],
    ['0 9 * * *', 'VALIDATION_FAILED'],
  ])('%o: %s', (extension, expected) => {
    const zone = (extension as { timezone?: string }).timezone ?? 'utc';
    expect(refusal(extension, extensionTrigger(zone))).toBe(expected);
  });
  test('the trigger beside the extension must name it, in the same zone', () => {
    const extension = { cron: '0 9 * * *', timezone: 'Europe/Berlin' };
    expect(refusal(extension, extensionTrigger('Europe/Berlin'))).toBe('accepted');
    expect(refusal(extension, extensionTrigger('utc'))).toBe('VALIDATION_FAILED');
    const v1 = {
      variant: 'schedule',
      version: 1,
      schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'Europe/Berlin' },
    };
    expect(refusal(extension, v1 as never)).toBe('VALIDATION_FAILED');
  });
});

/**
 * An independent expander for cron expressions `M H * * D` (and the equal RFC 5545 rule), written against Temporal
 * directly: walk every minute of the local days, keep those the fields match, skip wall times in a gap, take the
 * earlier instant in a fold.
 */
function oracle(
  fields: { minutes: number[]; hours: number[]; days: number[] },
  zone: string,
  after: number,
  until: number,
) {
  const tz = zone === 'utc' ? 'UTC' : zone;
  const first = Temporal.Instant.fromEpochMilliseconds(after)
    .toZonedDateTimeISO(tz)
    .toPlainDate()
    .subtract({ days: 1 });
  const last = Temporal.Instant.fromEpochMilliseconds(until).toZonedDateTimeISO(tz).toPlainDate().add({ days: 1 });
  const out: string[] = [];
  for (let day = first; Temporal.PlainDate.compare(day, last) <= 0; day = day.add({ days: 1 })) {
    if (!fields.days.includes(day.dayOfWeek % 7)) continue;
    for (const hour of fields.hours)
      for (const minute of fields.minutes) {
        const wall = day.toPlainDateTime({ hour, minute });
        const earlier = wall.toZonedDateTime(tz, { disambiguation: 'earlier' });
        if (!earlier.toPlainDateTime().equals(wall)) continue;
        const instant = earlier.epochMilliseconds;
        if (instant > after && instant <= until) out.push(new Date(instant).toISOString());
      }
  }
  return out.sort();
}

const ZONES = ['utc', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kolkata'];
/** Instants near each zone's 2026 DST changes (and some far from any). */
const NEAR_CHANGES = [
  '2026-03-08T06:00:00Z',
  '2026-03-29T00:00:00Z',
  '2026-04-04T14:00:00Z',
  '2026-04-05T02:00:00Z',
  '2026-09-06T03:00:00Z',
  '2026-10-03T15:00:00Z',
  '2026-10-25T00:00:00Z',
  '2026-11-01T05:00:00Z',
  '2026-07-01T12:00:00Z',
].map(Date.parse);

test('cron and RFC 5545 slots match an independent expander in zones with and without DST (seeded)', () => {
  const sorted = (values: number[]) => [...new Set(values)].sort((a, b) => a - b);
  const fields = fc.record({
    minutes: fc.array(fc.integer({ min: 0, max: 59 }), { minLength: 1, maxLength: 4 }).map(sorted),
    hours: fc.array(fc.integer({ min: 0, max: 23 }), { minLength: 1, maxLength: 6 }).map(sorted),
    days: fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 7 }).map(sorted),
  });
  const window = fc.record({
    near: fc.constantFrom(...NEAR_CHANGES),
    offsetMin: fc.integer({ min: -36 * 60, max: 12 * 60 }),
    lengthMin: fc.integer({ min: 1, max: 48 * 60 }),
  });
  const byDay = ['SU', 'MO', 'TU', 'WE', 'TH', 'FR', 'SA'];
  fc.assert(
    fc.property(fields, fc.constantFrom(...ZONES), window, (f, timezone, w) => {
      const after = w.near + w.offsetMin * 60_000;
      const until = after + w.lengthMin * 60_000;
      const expected = oracle(f, timezone, after, until);
      const context = oracle(f, timezone, after - 8 * 86_400_000, until + 8 * 86_400_000);
      const cron = `${f.minutes.join(',')} ${f.hours.join(',')} * * ${f.days.join(',')}`;
      const rrule = `FREQ=WEEKLY;BYDAY=${f.days.map((d) => byDay[d]).join(',')};BYHOUR=${f.hours.join(',')};BYMINUTE=${f.minutes.join(',')}`;
      for (const extension of [
        { cron, timezone },
        { rrule, timezone },
      ]) {
        const schedule = scheduleOf(extension);
        expect(iso(schedule.slotsBetween(new Date(after), new Date(until))), JSON.stringify(extension)).toEqual(
          expected,
        );
        // Asked at instants across the window (fold second passes included), latest and next agree with it too.
        for (let probe = after; probe <= until; probe += Math.max(60_000, Math.floor((until - after) / 24))) {
          const latest = context.filter((slot) => Date.parse(slot) <= probe).at(-1);
          if (latest !== undefined) expect(schedule.latestAtOrBefore(new Date(probe))?.toISOString()).toBe(latest);
          const next = context.find((slot) => Date.parse(slot) > probe);
          if (next !== undefined) expect(schedule.nextAfter(new Date(probe))?.toISOString()).toBe(next);
        }
      }
    }),
    propertyParameters('schedule extension against an independent expander', 60),
  );
});
