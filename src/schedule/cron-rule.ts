import { CronExpressionParser, type CronExpression } from 'cron-parser';
import type { WallMs } from './wall-clock.js';
import { formRefusals, type WallRule } from './wall-rule.js';

/** Macros cron-parser knows whose slots are at least a minute apart; `@secondly` is below the minimum interval. */
const MACROS = [
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@hourly',
  '@minutely',
  '@weekdays',
  '@weekends',
];

const { malformed, unsupported } = formRefusals('cron');

/** Refuses what the schedule does not take before the library sees it: seconds, hashed (random) fields, 4 fields. */
function checkShape(cron: string): void {
  const text = cron.trim();
  if (text.startsWith('@')) {
    if (text.toLowerCase() === '@secondly')
      throw unsupported(cron, 'cron.seconds', 'slots are on whole minutes (the minimum interval is one minute)');
    if (!MACROS.includes(text.toLowerCase())) throw malformed(cron, `${text} is not a macro (${MACROS.join(', ')})`);
    return;
  }
  const fields = text.split(/\s+/);
  if (fields.length === 6)
    throw unsupported(cron, 'cron.seconds', 'a seconds field is not taken: the minimum interval is one minute');
  if (fields.length !== 5)
    throw malformed(cron, `it has ${fields.length} fields; minute hour day-of-month month day-of-week are five`);
  // Of the day and month names only THU holds an H.
  if (/h/i.test(text.replace(/thu/gi, '')))
    throw unsupported(cron, 'cron.hash', 'hashed fields (H) pick slots at random; name the minute and hour');
}

/**
 * A 5-field cron expression (or macro) stepped in wall time, parsed by cron-parser (the parser BullMQ uses):
 * day-of-month and day-of-week together match either (as in Vixie cron), `L`, `#` and `?` as cron-parser reads
 * them. A malformed expression is VALIDATION_FAILED; seconds and hashed fields are CAPABILITY_UNSUPPORTED.
 *
 * @example
 * ```ts
 * const rule = new CronRule('*\/15 * * * *');
 * rule.next(Date.parse('2026-03-29T00:50:00Z')); // 2026-03-29T01:00:00Z (a wall time, read in UTC)
 * ```
 */
export class CronRule implements WallRule {
  private readonly expression: CronExpression;

  constructor(readonly cron: string) {
    checkShape(cron);
    try {
      this.expression = CronExpressionParser.parse(cron.trim(), { tz: 'UTC', strict: false });
    } catch (error) {
      throw malformed(cron, (error as Error).message);
    }
  }

  next(after: WallMs): WallMs | null {
    this.expression.reset(new Date(after));
    return this.step(() => this.expression.next().getTime());
  }

  previous(atOrBefore: WallMs): WallMs | null {
    // cron-parser's prev() is strictly before its current date; a whole-minute slot at `atOrBefore` counts.
    this.expression.reset(new Date(atOrBefore + 1));
    return this.step(() => this.expression.prev().getTime());
  }

  /** cron-parser throws past the dates it can reach (years ahead for the sparsest rule): there is no slot. */
  private step(move: () => number): WallMs | null {
    try {
      return move();
    } catch {
      return null;
    }
  }
}
