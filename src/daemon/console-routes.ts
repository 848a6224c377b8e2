import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ContractError } from '../contract/errors.js';
import { hiddenAutomations } from '../domain/read-acl.js';
import {
  extensionTrigger,
  makeSchedule,
  SCHEDULE_EXTENSION,
  type ScheduleExtension,
  type ScheduleTerms,
} from '../schedule/schedule-extension.js';
import type { DaemonContext } from './context.js';
import { machineCounts } from './machine-counts.js';
import { callerOf } from './trust.js';

/** Most slots one preview lists. */
export const PREVIEW_MAX = 50;
const PREVIEW_DEFAULT = 5;

/** A query parameter that must be a string of at most `max` characters. */
function textParam(query: Record<string, unknown>, name: string, max: number): string {
  const value = query[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > max)
    throw new ContractError('VALIDATION_FAILED', `${name} must be a string of 1–${max} characters`, { field: name });
  return value;
}

function countParam(query: Record<string, unknown>): number {
  const text = query.count;
  if (text === undefined) return PREVIEW_DEFAULT;
  if (typeof text !== 'string' || !/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > PREVIEW_MAX)
    throw new ContractError('VALIDATION_FAILED', `count must be a whole number from 1 to ${PREVIEW_MAX}`, {
      field: 'count',
    });
  return Number(text);
}

/**
 * The next `count` slots of a schedule after the engine clock's now, expanded by the engine's own Schedule:
 * what the scheduler would plan for a definition with this trigger once it is active. A rule or zone the
 * contract refuses is the same typed refusal a create or revise would get.
 */
export function schedulePreview(request: FastifyRequest, now: Date): Record<string, unknown> {
  const query = request.query as Record<string, unknown>;
  const count = countParam(query);
  const { terms, shown } = previewTerms(query);
  const schedule = makeSchedule(terms);
  const scheduledTimes: string[] = [];
  for (let after = now; scheduledTimes.length < count;) {
    const next = schedule.nextAfter(after);
    if (next === null) break;
    scheduledTimes.push(next.toISOString());
    after = next;
  }
  return { ...shown, timezone: terms.trigger.schedule.timezone, from: now.toISOString(), scheduledTimes };
}

/**
 * The schedule a preview asks for: `rrule` and `timezone` (the v1 trigger), or `schedule`, the JSON body of the
 * schedule extension (checked as a definition's would be).
 */
function previewTerms(query: Record<string, unknown>): { terms: ScheduleTerms; shown: Record<string, string> } {
  if (query.schedule === undefined) {
    const rrule = textParam(query, 'rrule', 200);
    const timezone = textParam(query, 'timezone', 64);
    return { terms: { trigger: { schedule: { rrule, timezone } } }, shown: { rrule } };
  }
  let extension: ScheduleExtension;
  try {
    extension = JSON.parse(textParam(query, 'schedule', 20_000)) as ScheduleExtension;
  } catch (error) {
    if (error instanceof ContractError) throw error;
    throw new ContractError('VALIDATION_FAILED', 'schedule must be the JSON of a schedule extension', {
      field: 'schedule',
    });
  }
  const timezone = typeof extension?.timezone === 'string' ? extension.timezone : 'utc';
  const terms = { trigger: extensionTrigger(timezone), extensions: { [SCHEDULE_EXTENSION]: extension } };
  return {
    terms,
    shown: extension?.cron !== undefined ? { cron: extension.cron } : { rrule: String(extension?.rrule) },
  };
}

/**
 * The console's own reads, beside the command API:
 * - `GET /api/v1/schedule/preview?rrule=…&timezone=…&count=N` (or `?schedule=<the schedule extension's JSON>`):
 *   the next N slots (1–50, default 5) of a schedule after the engine's now, for the editor's preview before it
 *   saves;
 * - `GET /api/v1/machines/counts`: how many live entities of each machine sit in each state (see
 *   {@link machineCounts}), for the machine-wide statechart view.
 *
 * Both are reads (no token needed over loopback TCP); a bad parameter is `400 VALIDATION_FAILED`.
 *
 * @example
 * ```ts
 * const plugin: DaemonPlugin = async (app, ctx) => registerConsoleRoutes(app, ctx);
 * ```
 */
export function registerConsoleRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  app.get('/api/v1/schedule/preview', { config: { trust: 'read' } }, async (request) =>
    schedulePreview(request, ctx.engine.services.clock.now()),
  );
  app.get('/api/v1/machines/counts', { config: { trust: 'read' } }, async (request) =>
    ctx.store.read(async (reader) => {
      const hidden = await hiddenAutomations(reader, callerOf(request, ctx));
      return { asOf: ctx.engine.services.clock.now().toISOString(), machines: await machineCounts(reader, hidden) };
    }),
  );
}
