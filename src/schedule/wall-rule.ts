import { ContractError } from '../contract/errors.js';
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

/**
 * The refusals of one form of the extension (`cron` or `rrule`): malformed text is VALIDATION_FAILED naming the
 * field, text this engine does not execute is CAPABILITY_UNSUPPORTED naming the variant.
 */
export function formRefusals(form: 'cron' | 'rrule') {
  const field = `extensions.${SCHEDULE_EXTENSION}.${form}`;
  return {
    malformed: (text: string, why: string) =>
      new ContractError('VALIDATION_FAILED', `${form} ${JSON.stringify(text)} is malformed: ${why}`, {
        field,
        reason: why,
      }),
    unsupported: (text: string, variant: string, why: string) =>
      new ContractError('CAPABILITY_UNSUPPORTED', `${form} ${JSON.stringify(text)} uses ${variant}: ${why}`, {
        contractProfile: SCHEDULE_EXTENSION,
        variant,
        reason: why,
      }),
  };
}
