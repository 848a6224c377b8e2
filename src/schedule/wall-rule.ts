import type { WallMs } from './wall-clock.js';

/** The definition extension that carries a cron expression or a full RFC 5545 rule (see docs/schedules.md). */
export const SCHEDULE_EXTENSION = 'x-coven-automata.schedule.v1';

/** A recurrence stepped in wall time (see {@link WallMs}); the zone and its DST changes are not its concern. */
export interface WallRule {
  /** The first slot strictly after `after`; null when the rule has no more. */
  next(after: WallMs): WallMs | null;
  /** The last slot at or before `atOrBefore`; null when the rule has none. */
  previous(atOrBefore: WallMs): WallMs | null;
}
