import { ianaZone, wallParts } from '../domain/wall-time.js';
import { DefinitionState } from '../../machines/index.js';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import { wholeNumber } from './occurrence-commands.js';
import type { ProgramKit } from './program-kit.js';
import type { ScheduleTerms } from '../schedule/schedule-extension.js';

const MAX_COUNT = 1000;

/**
 * A preview of when a definition's schedule fires: its rule (the v1 trigger's or the schedule extension's RFC 5545
 * rule) or cron expression, its zone and the next slots from `from` on.
 */
export interface SchedulePreview {
  automationId: string;
  lifecycleState: string;
  rrule?: string;
  cron?: string;
  timezone: string;
  from: string;
  scheduledTimes: string[];
}

/**
 * The next `count` slots after `from` of the schedule of a definition.get.v1 result, expanded with the
 * engine's own schedule (loaded on use): what the scheduler plans while the definition is active.
 */
export async function previewSchedule(
  got: Record<string, unknown>,
  count: number,
  from: Date,
): Promise<SchedulePreview> {
  const definition = got.definition as ScheduleTerms;
  const { makeSchedule, scheduleExtensionOf } = await import('../schedule/schedule-extension.js');
  const schedule = makeSchedule(definition);
  const extension = scheduleExtensionOf(definition);
  const rule =
    extension === undefined
      ? { rrule: definition.trigger.schedule.rrule }
      : extension.cron !== undefined
        ? { cron: extension.cron }
        : { rrule: extension.rrule! };
  const timezone = definition.trigger.schedule.timezone;
  const scheduledTimes: string[] = [];
  for (let after = from; scheduledTimes.length < count;) {
    const next = schedule.nextAfter(after);
    if (next === null) break;
    scheduledTimes.push(next.toISOString());
    after = next;
  }
  return {
    automationId: String(got.automationId),
    lifecycleState: String(got.lifecycleState),
    ...rule,
    timezone,
    from: from.toISOString(),
    scheduledTimes,
  };
}

/** The wall time of `iso` in the definition's zone, e.g. `2026-03-05 02:00 Europe/Berlin`. */
const wallTime = (iso: string, timezone: string): string =>
  `${wallParts(new Date(iso), timezone, false).time} ${ianaZone(timezone)}`;

/** The human preview: a header naming the rule, then one line per slot (UTC and the zone's wall time). */
export function previewLines(preview: SchedulePreview): string {
  const lines = [
    `${preview.automationId} (${preview.lifecycleState}): ` +
      `${preview.cron === undefined ? preview.rrule : `cron ${preview.cron}`} in ${preview.timezone}, ` +
      `next ${preview.scheduledTimes.length} after ${preview.from}`,
    ...preview.scheduledTimes.map((t) => `  ${t}  ${wallTime(t, preview.timezone)}`),
  ];
  if (preview.lifecycleState !== DefinitionState.active)
    lines.push(`note: ${preview.automationId} is ${preview.lifecycleState}; nothing is planned until it is active`);
  return lines.join('\n');
}

async function printPreview(engine: CliEngine, id: string, count: number, opts: CliOptions): Promise<number> {
  const got = await engine.commands.handle(envelope('definition.get.v1', { automationId: id }));
  if (got.outcome === 'rejected') return report(got, opts);
  // The CLI has no engine clock to ask: the preview starts now, by this machine's clock.
  const preview = await previewSchedule(got.result!, count, new Date());
  console.log(opts.json === true ? JSON.stringify(preview, null, 2) : previewLines(preview));
  return 0;
}

/** `next <automationId> [--count N]`: when the trigger fires next. */
export function registerNextCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('next <automationId>')
    .description("preview the next scheduled times of a definition's trigger")
    .option('--count <n>', `how many (1 to ${MAX_COUNT})`, '5')
    .action(
      run(async (id: string, cmd: { count: string }) => {
        const count = wholeNumber('--count', cmd.count, MAX_COUNT)!;
        return withEngine(opts(), (engine) => printPreview(engine, id, count, opts()));
      }),
    );
}
