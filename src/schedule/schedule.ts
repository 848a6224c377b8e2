import { RRuleTemporal } from 'rrule-temporal';
import { Temporal } from 'temporal-polyfill';
import { checkTimezone, parseRrule, type ScheduleRule } from './rrule.js';
import type { SlotSchedule } from './zoned-schedule.js';

/** Any fixed instant works as DTSTART: v1 rules have no COUNT/INTERVAL, so the phase never matters. */
const ANCHOR = '20000103T000000';
const DAY_MS = 86_400_000;
/**
 * Windows nextAfter looks in, growing geometrically, so its cost follows the distance to the next slot (an
 * expansion costs per slot it yields, so a day's window costs many hours' worth); the last is the contract's
 * 15-day horizon.
 */
const NEXT_SLOT_WINDOWS_DAYS = [1 / 24, 1, 15];
/**
 * Answers {@link Schedule.nextAfter} remembers per schedule. Definitions that share a rule share its
 * schedule and, planned on the same slots, ask it the same instants: a burst of N due on one rule expands
 * once instead of N times. A few instants cover a pass and the next.
 */
const REMEMBERED_NEXT_SLOTS = 8;

/**
 * A definition's trigger as a sequence of instants: the contract's RRULE subset in `utc` or an IANA zone,
 * expanded by rrule-temporal. Wall times that do not exist (spring-forward gap) are skipped; ambiguous
 * ones (fall-back fold) fire once, at the first, earlier instant. Host timezone never matters.
 *
 * @example
 * ```ts
 * const schedule = new Schedule('FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8', 'Europe/Berlin');
 * schedule.latestAtOrBefore(new Date('2026-03-04T12:00:00Z')); // 2026-03-02T07:00:00.000Z
 * ```
 */
export class Schedule implements SlotSchedule {
  readonly rule: ScheduleRule;
  private readonly expander: RRuleTemporal;
  /** `after` (epoch ms) → the first slot after it (epoch ms, null for none): a pure function of the rule. */
  private readonly nextSlots = new Map<number, number | null>();

  constructor(
    readonly rrule: string,
    readonly timezone: string,
  ) {
    this.rule = parseRrule(rrule);
    checkTimezone(timezone);
    const zone = timezone === 'utc' ? 'UTC' : timezone;
    const parts = [`FREQ=${this.rule.freq}`, `BYHOUR=${this.rule.byHour.join(',')}`, 'BYMINUTE=0', 'BYSECOND=0'];
    if (this.rule.freq === 'WEEKLY') parts.push(`BYDAY=${this.rule.byDay.join(',')}`);
    this.expander = new RRuleTemporal({
      rruleString: `DTSTART;TZID=${zone}:${ANCHOR}\nRRULE:${parts.join(';')}`,
      temporal: Temporal as never,
    });
  }

  /** Slots `s` with `after < s <= until`, oldest first. */
  slotsBetween(after: Date, until: Date): Date[] {
    if (until.getTime() <= after.getTime()) return [];
    return this.expander
      .between(after, until, true)
      .map((z) => new Date((z as unknown as Temporal.ZonedDateTime).epochMilliseconds))
      .filter((d) => d.getTime() > after.getTime() && d.getTime() <= until.getTime());
  }

  /** The latest slot at or before `at`, looking back at most `lookbackDays`. */
  latestAtOrBefore(at: Date, lookbackDays = 15): Date | null {
    const slots = this.slotsBetween(new Date(at.getTime() - lookbackDays * DAY_MS), at);
    return slots.length === 0 ? null : slots[slots.length - 1]!;
  }

  /** The first slot strictly after `after`, looking forward at most 15 days (a weekly rule always has one). */
  nextAfter(after: Date): Date | null {
    const known = this.nextSlots.get(after.getTime());
    if (known !== undefined) return known === null ? null : new Date(known);
    const next = this.expandNextAfter(after);
    if (this.nextSlots.size >= REMEMBERED_NEXT_SLOTS) this.nextSlots.delete(this.nextSlots.keys().next().value!);
    this.nextSlots.set(after.getTime(), next?.getTime() ?? null);
    return next;
  }

  private expandNextAfter(after: Date): Date | null {
    // An hourly rule's next slot is within the hour, a daily rule's within the day; the 15-day window is only
    // for weekly rules and a DST gap that swallowed a day's only slot.
    for (const days of NEXT_SLOT_WINDOWS_DAYS) {
      const next = this.slotsBetween(after, new Date(after.getTime() + days * DAY_MS))[0];
      if (next !== undefined) return next;
    }
    return null;
  }
}
