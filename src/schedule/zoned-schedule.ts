import type { WallClock, WallMs } from './wall-clock.js';
import type { WallRule } from './wall-rule.js';

const DAY_MS = 86_400_000;
/** More candidates than any DST change can hide (a minutely rule's fold or gap is 60), bounding every search. */
const MAX_CANDIDATES = 10_000;

/** A definition's slots as instants: what planning, `next` and the readers ask of any schedule. */
export interface SlotSchedule {
  /** Slots `s` with `after < s <= until`, oldest first. */
  slotsBetween(after: Date, until: Date): Date[];
  /** The latest slot at or before `at`, looking back at most `lookbackDays`. */
  latestAtOrBefore(at: Date, lookbackDays?: number): Date | null;
  /** The first slot strictly after `after`; null when there is none the schedule looks for. */
  nextAfter(after: Date): Date | null;
}

/**
 * A rule stepped in wall time, answered in instants of its zone with the contract's DST rules (see
 * {@link WallClock}): a slot whose wall time does not exist is skipped, one that happens twice runs at its first
 * instant. `exdate` wall times are never slots.
 */
export class ZonedSchedule implements SlotSchedule {
  constructor(
    private readonly rule: WallRule,
    private readonly clock: WallClock,
    private readonly exdates: ReadonlySet<WallMs> = new Set(),
  ) {}

  slotsBetween(after: Date, until: Date): Date[] {
    const slots: Date[] = [];
    for (let slot = this.nextAfter(after); slot !== null && slot <= until; slot = this.nextAfter(slot))
      slots.push(slot);
    return slots;
  }

  /**
   * Walks back from the latest wall time that can map at or before `at` (see {@link WallClock.wallBoundAt}),
   * past wall times in a gap, in `exdate`, or whose first instant is still after `at`.
   */
  latestAtOrBefore(at: Date, lookbackDays = 15): Date | null {
    const floor = this.clock.wallAt(at.getTime() - lookbackDays * DAY_MS);
    let wall = this.rule.previous(this.clock.wallBoundAt(at.getTime()));
    for (let seen = 0; wall !== null && wall >= floor && seen < MAX_CANDIDATES; seen++) {
      const instant = this.slotAt(wall);
      if (instant !== null && instant <= at.getTime()) return new Date(instant);
      wall = this.rule.previous(wall - 1);
    }
    return null;
  }

  /**
   * Walks forward from the wall time at `after`: no wall time before it maps after `after` (the mapping never
   * decreases), and the first that does is the answer.
   */
  nextAfter(after: Date): Date | null {
    let wall = this.rule.next(this.clock.wallAt(after.getTime()));
    for (let seen = 0; wall !== null && seen < MAX_CANDIDATES; seen++) {
      const instant = this.slotAt(wall);
      if (instant !== null && instant > after.getTime()) return new Date(instant);
      wall = this.rule.next(wall);
    }
    return null;
  }

  private slotAt(wall: WallMs): number | null {
    return this.exdates.has(wall) ? null : this.clock.instantOf(wall);
  }
}
