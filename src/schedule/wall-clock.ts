import { Temporal } from 'temporal-polyfill';

/**
 * A wall time in a zone as the epoch milliseconds of the same fields read in UTC: the clock on the wall,
 * with no offset applied. Rules are stepped in wall time, so a rule's arithmetic never meets a DST change.
 */
export type WallMs = number;

/**
 * A zone's clock: instants to wall times and back, with the contract's DST rules. A wall time that does not
 * exist (the spring-forward gap) has no instant; one that happens twice (the fall-back fold) is its first,
 * earlier instant. Mapping wall times to instants this way keeps their order (never decreasing), which is what
 * lets a schedule step its rule in wall time and still answer in instants.
 */
export class WallClock {
  private readonly utc: boolean;

  constructor(readonly timezone: string) {
    this.utc = timezone === 'utc' || timezone === 'UTC';
  }

  /** The wall time in this zone at `instant` (epoch ms). */
  wallAt(instant: number): WallMs {
    if (this.utc) return instant;
    const zoned = Temporal.Instant.fromEpochMilliseconds(instant).toZonedDateTimeISO(this.timezone);
    return instant + zoned.offsetNanoseconds / 1e6;
  }

  /** The instant (epoch ms) of a wall time: null inside a DST gap, the earlier one in a fold. */
  instantOf(wall: WallMs): number | null {
    if (this.utc) return wall;
    const plain = Temporal.Instant.fromEpochMilliseconds(wall).toZonedDateTimeISO('UTC').toPlainDateTime();
    const zoned = plain.toZonedDateTime(this.timezone, { disambiguation: 'earlier' });
    // In a gap 'earlier' answers a shifted wall time; only a wall time that maps back to itself exists.
    return Temporal.PlainDateTime.compare(zoned.toPlainDateTime(), plain) === 0 ? zoned.epochMilliseconds : null;
  }

  /**
   * The latest wall time whose instant can be at or before `instant`: in a fold's second pass the wall clock
   * reads earlier than the slots already passed, so the bound takes the larger of the offsets now and three
   * hours before (folds of the tz database are at most an hour, bar historical oddities).
   */
  wallBoundAt(instant: number): WallMs {
    return Math.max(this.wallAt(instant), this.wallAt(instant - FOLD_REACH_MS) + FOLD_REACH_MS);
  }
}

const FOLD_REACH_MS = 3 * 3_600_000;

/** Parses a wall time `YYYY-MM-DDTHH:MM[:SS]` (no zone) to {@link WallMs}. */
export function parseWallTime(text: string): WallMs {
  return Temporal.PlainDateTime.from(text).toZonedDateTime('UTC').epochMilliseconds;
}
