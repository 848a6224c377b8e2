import fc from 'fast-check';
import { Temporal } from 'temporal-polyfill';
import { describe, expect, test } from 'vitest';
import { parseRrule, WEEKDAYS, type ScheduleRule } from '../../src/schedule/rrule.js';
import { Schedule } from '../../src/schedule/schedule.js';
import { propertyParameters } from '../support/property.js';

/**
 * An independent expander for the v1 subset, written against Temporal directly: walk the local dates,
 * keep the rule's weekdays and hours, skip wall times in a gap, take the earlier instant in a fold.
 */
function oracle(rule: ScheduleRule, timezone: string, after: Date, until: Date): string[] {
  const zone = timezone === 'utc' ? 'UTC' : timezone;
  const first = Temporal.Instant.fromEpochMilliseconds(after.getTime())
    .toZonedDateTimeISO(zone)
    .toPlainDate()
    .subtract({ days: 1 });
  const last = Temporal.Instant.fromEpochMilliseconds(until.getTime())
    .toZonedDateTimeISO(zone)
    .toPlainDate()
    .add({ days: 1 });
  const out: string[] = [];
  for (let day = first; Temporal.PlainDate.compare(day, last) <= 0; day = day.add({ days: 1 })) {
    if (rule.freq === 'WEEKLY' && !rule.byDay.includes(WEEKDAYS[day.dayOfWeek - 1]!)) continue;
    for (const hour of rule.byHour) {
      const wall = day.toPlainDateTime({ hour });
      let instant: number;
      try {
        instant = wall.toZonedDateTime(zone, { disambiguation: 'reject' }).epochMilliseconds;
      } catch {
        const earlier = wall.toZonedDateTime(zone, { disambiguation: 'earlier' });
        // 'reject' also throws for a fold; a fold round-trips to the same wall time, a gap does not.
        if (!earlier.toPlainDateTime().equals(wall)) continue;
        instant = earlier.epochMilliseconds;
      }
      if (instant > after.getTime() && instant <= until.getTime()) out.push(new Date(instant).toISOString());
    }
  }
  return out.sort();
}

const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('Schedule', () => {
  test('daily at 09:00 UTC, default hour', () => {
    const s = new Schedule('FREQ=DAILY', 'utc');
    expect(iso(s.slotsBetween(new Date('2026-03-01T00:00:00Z'), new Date('2026-03-03T09:00:00Z')))).toEqual([
      '2026-03-01T09:00:00.000Z',
      '2026-03-02T09:00:00.000Z',
      '2026-03-03T09:00:00.000Z',
    ]);
  });

  test('weekly defaults to Monday', () => {
    const s = new Schedule('FREQ=WEEKLY;BYHOUR=8', 'utc');
    expect(iso(s.slotsBetween(new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T00:00:00Z')))).toEqual([
      '2026-03-02T08:00:00.000Z',
      '2026-03-09T08:00:00.000Z',
    ]);
  });

  test('the spring-forward gap is skipped, not shifted (New York, 2026-03-08 02:00)', () => {
    const s = new Schedule('FREQ=DAILY;BYHOUR=2', 'America/New_York');
    expect(iso(s.slotsBetween(new Date('2026-03-07T00:00:00Z'), new Date('2026-03-10T00:00:00Z')))).toEqual([
      '2026-03-07T07:00:00.000Z',
      '2026-03-09T06:00:00.000Z',
    ]);
  });

  test('the fall-back fold fires once, at the earlier instant (New York, 2026-11-01 01:00)', () => {
    const s = new Schedule('FREQ=DAILY;BYHOUR=1', 'America/New_York');
    expect(iso(s.slotsBetween(new Date('2026-11-01T00:00:00Z'), new Date('2026-11-02T00:00:00Z')))).toEqual([
      '2026-11-01T05:00:00.000Z',
    ]);
  });

  test('leap day and year boundary', () => {
    const s = new Schedule('FREQ=WEEKLY;BYDAY=SU;BYHOUR=23', 'Asia/Tokyo');
    expect(iso(s.slotsBetween(new Date('2028-02-27T00:00:00Z'), new Date('2028-03-06T00:00:00Z')))).toEqual([
      '2028-02-27T14:00:00.000Z',
      '2028-03-05T14:00:00.000Z',
    ]);
    const d = new Schedule('FREQ=DAILY;BYHOUR=0', 'Pacific/Auckland');
    expect(iso(d.slotsBetween(new Date('2026-12-30T00:00:00Z'), new Date('2027-01-01T12:00:00Z')))).toEqual([
      '2026-12-30T11:00:00.000Z',
      '2026-12-31T11:00:00.000Z',
      '2027-01-01T11:00:00.000Z',
    ]);
  });

  test('latestAtOrBefore and nextAfter', () => {
    const s = new Schedule('FREQ=DAILY;BYHOUR=9,21', 'utc');
    expect(s.latestAtOrBefore(new Date('2026-03-02T09:00:00Z'))?.toISOString()).toBe('2026-03-02T09:00:00.000Z');
    expect(s.latestAtOrBefore(new Date('2026-03-02T08:59:59Z'))?.toISOString()).toBe('2026-03-01T21:00:00.000Z');
    expect(s.nextAfter(new Date('2026-03-02T09:00:00Z'))?.toISOString()).toBe('2026-03-02T21:00:00.000Z');
  });

  test('agrees with an independent Temporal expander on random rules, zones and windows', () => {
    const zones = [
      'utc',
      'America/New_York',
      'Europe/Berlin',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
      'America/Sao_Paulo',
      'Pacific/Chatham',
      'Europe/London',
    ];
    const rule = fc.oneof(
      fc
        .uniqueArray(fc.integer({ min: 0, max: 23 }), { minLength: 1, maxLength: 4 })
        .map((h) => `FREQ=DAILY;BYHOUR=${h.join(',')}`),
      fc
        .tuple(
          fc.uniqueArray(fc.integer({ min: 0, max: 23 }), { minLength: 1, maxLength: 3 }),
          fc.uniqueArray(fc.constantFrom(...WEEKDAYS), { minLength: 1, maxLength: 7 }),
        )
        .map(([h, d]) => `FREQ=WEEKLY;BYDAY=${d.join(',')};BYHOUR=${h.join(',')}`),
    );
    const window = fc.tuple(
      fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2029, 0, 1) }),
      fc.integer({ min: 1, max: 20 * 86_400_000 }),
    );
    fc.assert(
      fc.property(rule, fc.constantFrom(...zones), window, (rrule, zone, [start, length]) => {
        const after = new Date(start);
        const until = new Date(start + length);
        expect(iso(new Schedule(rrule, zone).slotsBetween(after, until))).toEqual(
          oracle(parseRrule(rrule), zone, after, until),
        );
      }),
      propertyParameters('schedule vs oracle', 300),
    );
  });
});

describe('Schedule.nextAfter', () => {
  test('a shared schedule asked many instants, again and again (past what it remembers), agrees with the oracle', () => {
    const instant = fc
      .integer({ min: Date.UTC(2026, 2, 1), max: Date.UTC(2026, 3, 1) })
      .map((ms) => ms - (ms % 1_800_000));
    fc.assert(
      fc.property(
        fc.constantFrom('FREQ=DAILY;BYHOUR=1,2', 'FREQ=WEEKLY;BYDAY=SU;BYHOUR=2'),
        fc.array(instant, { minLength: 1, maxLength: 40 }),
        (rrule, asked) => {
          const shared = new Schedule(rrule, 'Europe/Berlin');
          for (const at of [...asked, ...asked.reverse()]) {
            const expected =
              oracle(parseRrule(rrule), 'Europe/Berlin', new Date(at), new Date(at + 15 * 86_400_000))[0] ?? null;
            const answer = shared.nextAfter(new Date(at));
            expect(answer?.toISOString() ?? null).toBe(expected);
            // A remembered answer is a fresh Date: a caller that changes it changes nothing remembered.
            answer?.setTime(0);
          }
        },
      ),
      propertyParameters('nextAfter remembered vs oracle', 50),
    );
  });
});

describe('parseRrule', () => {
  test.each([
    ['FREQ=DAILY', { freq: 'DAILY', byHour: [9], byDay: [] }],
    ['freq=weekly;byday=mon,fri;byhour=17,8', { freq: 'WEEKLY', byHour: [8, 17], byDay: ['MO', 'FR'] }],
    ['RRULE:FREQ=WEEKLY', { freq: 'WEEKLY', byHour: [9], byDay: ['MO'] }],
  ])('%s', (rrule, expected) => {
    expect(parseRrule(rrule)).toEqual(expected);
  });

  test.each([
    ['', 'VALIDATION_FAILED'],
    ['FREQ=DAILY;;BYHOUR=9', 'VALIDATION_FAILED'],
    ['FREQ=DAILY;FREQ=DAILY', 'VALIDATION_FAILED'],
    ['FREQ=DAILY;BYHOUR=9,9', 'VALIDATION_FAILED'],
    ['FREQ=DAILY;BYHOUR=24', 'VALIDATION_FAILED'],
    ['FREQ=DAILY;BYHOUR=', 'VALIDATION_FAILED'],
    ['BYHOUR=9', 'VALIDATION_FAILED'],
    ['FREQ=SOMETIMES', 'VALIDATION_FAILED'],
    ['FREQ=WEEKLY;BYDAY=XX', 'VALIDATION_FAILED'],
    ['FREQ=HOURLY', 'CAPABILITY_UNSUPPORTED'],
    ['FREQ=MONTHLY', 'CAPABILITY_UNSUPPORTED'],
    ['FREQ=DAILY;INTERVAL=2', 'CAPABILITY_UNSUPPORTED'],
    ['FREQ=DAILY;COUNT=3', 'CAPABILITY_UNSUPPORTED'],
    ['FREQ=DAILY;BYDAY=MO', 'CAPABILITY_UNSUPPORTED'],
    ['FREQ=WEEKLY;BYDAY=1MO', 'CAPABILITY_UNSUPPORTED'],
  ])('%s is refused with %s', (rrule, code) => {
    expect(() => parseRrule(rrule)).toThrow(expect.objectContaining({ code }));
  });
});
