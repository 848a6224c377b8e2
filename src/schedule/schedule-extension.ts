import { Temporal } from 'temporal-polyfill';
import { ContractError } from '../contract/errors.js';
import { requireValidExtension } from '../contract/schemas.js';
import { checkTimezone } from './rrule.js';
import { CronRule } from './cron-rule.js';
import { RfcRule } from './rfc-rule.js';
import { Schedule } from './schedule.js';
import { parseWallTime, WallClock, type WallMs } from './wall-clock.js';
import { SCHEDULE_EXTENSION } from './wall-rule.js';
import { ZonedSchedule, type SlotSchedule } from './zoned-schedule.js';

export { SCHEDULE_EXTENSION } from './wall-rule.js';

/**
 * The rule a definition's contract trigger carries when {@link SCHEDULE_EXTENSION} holds its schedule. The
 * contract requires a trigger; this one names the extension, and a v1 consumer that does not know it refuses it
 * as CAPABILITY_UNSUPPORTED (FREQ=MINUTELY is not a v1 frequency) instead of running some other schedule.
 */
export const EXTENSION_TRIGGER_RRULE = 'FREQ=MINUTELY;X-COVEN-AUTOMATA-SCHEDULE=V1';

/** The body of {@link SCHEDULE_EXTENSION}, as its schema (schedule-extension.schema.json) admits it. */
export interface ScheduleExtension {
  cron?: string;
  rrule?: string;
  dtstart?: string;
  exdate?: string[];
  timezone: string;
}

/** What a schedule is made from: a definition's contract trigger and its extensions bag. */
export interface ScheduleTerms {
  trigger: { schedule: { rrule: string; timezone: string } };
  extensions?: Record<string, unknown>;
}

/** The definition's {@link SCHEDULE_EXTENSION} body, when it has one (unchecked: see {@link checkScheduleTerms}). */
export const scheduleExtensionOf = (terms: ScheduleTerms): ScheduleExtension | undefined =>
  terms.extensions?.[SCHEDULE_EXTENSION] as ScheduleExtension | undefined;

/** The trigger the contract requires beside a {@link SCHEDULE_EXTENSION} schedule in `timezone`. */
export const extensionTrigger = (timezone: string) =>
  ({ variant: 'schedule', version: 1, schedule: { rrule: EXTENSION_TRIGGER_RRULE, timezone } }) as const;

/** What a reader shows as the schedule: the cron expression or rule, whichever form the definition uses. */
export function scheduleText(terms: ScheduleTerms): string {
  const extension = scheduleExtensionOf(terms);
  if (extension === undefined) return terms.trigger.schedule.rrule;
  return extension.cron !== undefined ? `cron ${extension.cron}` : `rrule ${extension.rrule}`;
}

/**
 * The rule an occurrence's trigger identity names (its `rruleRef`, at most 512 characters): the v1 trigger's rule,
 * or the extension's cron expression or RFC 5545 rule as written.
 */
export function scheduleRef(terms: ScheduleTerms): string {
  const extension = scheduleExtensionOf(terms);
  return extension === undefined ? terms.trigger.schedule.rrule : (extension.cron ?? extension.rrule!);
}

/** Identifies a schedule: definitions with equal keys have the same slots (so they can share one expander). */
export function scheduleKey(terms: ScheduleTerms): string {
  const extension = scheduleExtensionOf(terms);
  const { rrule, timezone } = terms.trigger.schedule;
  return extension === undefined ? `${timezone}\u0000${rrule}` : JSON.stringify(extension);
}

/**
 * Validates the extension's body (its schema, the zone, the rule) and that the trigger names it; the contract's
 * v1 trigger alone is checked as before. Malformed is VALIDATION_FAILED, beyond what the extension executes
 * CAPABILITY_UNSUPPORTED.
 */
export function checkScheduleTerms(terms: ScheduleTerms): void {
  makeSchedule(terms);
}

/** The definition's schedule: the v1 trigger's, or the extension's cron expression or RFC 5545 rule. */
export function makeSchedule(terms: ScheduleTerms): SlotSchedule {
  const raw = terms.extensions?.[SCHEDULE_EXTENSION];
  if (raw === undefined) return new Schedule(terms.trigger.schedule.rrule, terms.trigger.schedule.timezone);
  requireValidExtension('schedule-extension.schema.json', SCHEDULE_EXTENSION, raw);
  const extension = raw as ScheduleExtension;
  checkTrigger(terms, extension);
  checkTimezone(extension.timezone);
  const clock = new WallClock(extension.timezone);
  const rule =
    extension.cron !== undefined
      ? new CronRule(extension.cron)
      : new RfcRule(extension.rrule!, clock, checkWallTime(extension.dtstart, 'dtstart'));
  return new ZonedSchedule(rule, clock, exdates(extension, clock));
}

function checkTrigger(terms: ScheduleTerms, extension: ScheduleExtension): void {
  const { rrule, timezone } = terms.trigger.schedule;
  if (rrule !== EXTENSION_TRIGGER_RRULE || timezone !== extension.timezone)
    throw new ContractError(
      'VALIDATION_FAILED',
      `a definition scheduled by ${SCHEDULE_EXTENSION} carries the trigger rule ${EXTENSION_TRIGGER_RRULE} in the ` +
        `extension's timezone (${extension.timezone}); \`apply -f\` fills it in when the file has no trigger`,
      { field: 'trigger.schedule', expected: { rrule: EXTENSION_TRIGGER_RRULE, timezone: extension.timezone } },
    );
}

function checkWallTime(text: string | undefined, name: string): string | undefined {
  if (text === undefined) return undefined;
  try {
    parseWallTime(text);
  } catch {
    throw new ContractError('VALIDATION_FAILED', `${name} ${JSON.stringify(text)} is not a date and time`, {
      field: `extensions.${SCHEDULE_EXTENSION}.${name}`,
    });
  }
  return text;
}

function instantOf(text: string): number {
  try {
    return Temporal.Instant.from(text).epochMilliseconds;
  } catch {
    throw new ContractError('VALIDATION_FAILED', `exdate ${JSON.stringify(text)} is not an instant`, {
      field: `extensions.${SCHEDULE_EXTENSION}.exdate`,
    });
  }
}

/** EXDATE entries as wall times: a wall time is one already; an instant (ending in Z) is the zone's wall time then. */
function exdates(extension: ScheduleExtension, clock: WallClock): Set<WallMs> {
  return new Set(
    (extension.exdate ?? []).map((text) =>
      text.endsWith('Z') ? clock.wallAt(instantOf(text)) : parseWallTime(checkWallTime(text, 'exdate')!),
    ),
  );
}
