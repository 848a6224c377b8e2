/** Where the engine gets time. Engine logic never reads the wall clock directly. */
export interface Clock {
  now(): Date;
}

/** The wall clock, for production use. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that moves only when told to: tests, simulations and the demo drive it step by step.
 *
 * @example
 * ```ts
 * const clock = new SimulatedClock('2026-03-01T08:59:00Z');
 * clock.advance({ minutes: 2 });
 * clock.now().toISOString(); // '2026-03-01T09:01:00.000Z'
 * ```
 */
export class SimulatedClock implements Clock {
  private current: number;

  constructor(start: string | Date) {
    this.current = new Date(start).getTime();
    if (Number.isNaN(this.current)) throw new Error(`invalid start instant ${String(start)}`);
  }

  now(): Date {
    return new Date(this.current);
  }

  set(instant: string | Date): void {
    const next = new Date(instant).getTime();
    if (Number.isNaN(next)) throw new Error(`invalid instant ${String(instant)}`);
    this.current = next;
  }

  advance(by: { milliseconds?: number; seconds?: number; minutes?: number; hours?: number; days?: number }): void {
    this.current +=
      (by.milliseconds ?? 0) +
      (by.seconds ?? 0) * 1e3 +
      (by.minutes ?? 0) * 6e4 +
      (by.hours ?? 0) * 3.6e6 +
      (by.days ?? 0) * 8.64e7;
  }
}

/** RFC 3339 UTC with milliseconds, the contract's timestamp form. */
export function isoNow(clock: Clock): string {
  return clock.now().toISOString();
}
