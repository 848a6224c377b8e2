import { ActionError, type DaemonApi } from './api.js';
import { el } from './dom.js';
import { wallTime } from './zoned.js';

/** How many upcoming slots the editor previews. */
const PREVIEW_COUNT = 5;

/** The definition extension that schedules by a cron expression or a full RFC 5545 rule (docs/schedules.md). */
const SCHEDULE_EXTENSION = 'x-coven-automata.schedule.v1';

interface Preview {
  rrule?: string;
  cron?: string;
  timezone: string;
  from: string;
  scheduledTimes: string[];
}

/**
 * The preview query of the schedule an edited body names (its schedule extension's, else its trigger's), or a
 * sentence saying why it names none.
 */
function scheduleOf(fields: Record<string, unknown>): Record<string, string> | string {
  const extension = (fields.extensions as Record<string, unknown> | undefined)?.[SCHEDULE_EXTENSION];
  if (extension !== undefined) return { schedule: JSON.stringify(extension) };
  const trigger = fields.trigger as
    { variant?: string; schedule?: { rrule?: unknown; timezone?: unknown } } | undefined;
  if (trigger?.variant !== 'schedule') return 'no schedule: this trigger runs only when asked (run now)';
  const { rrule, timezone } = trigger.schedule ?? {};
  if (typeof rrule !== 'string' || typeof timezone !== 'string')
    return 'trigger.schedule needs an rrule and a timezone';
  return { rrule, timezone };
}

/**
 * The next runs of an edited definition's schedule, as the daemon's engine expands it
 * (`GET /api/v1/schedule/preview`): each slot in the definition's zone and in the viewer's. A rule or zone the
 * contract refuses shows the daemon's typed refusal, before anything is saved.
 *
 * @example
 * ```ts
 * panel.append(await schedulePreview(api, { trigger: { variant: 'schedule', schedule: { rrule, timezone } } }));
 * ```
 */
export async function schedulePreview(api: DaemonApi, fields: Record<string, unknown>): Promise<HTMLElement> {
  const schedule = scheduleOf(fields);
  if (typeof schedule === 'string') return el('p', { class: 'muted', 'data-testid': 'preview' }, schedule);
  const query = new URLSearchParams({ ...schedule, count: String(PREVIEW_COUNT) });
  try {
    const preview = await api.get<Preview>(`/api/v1/schedule/preview?${query.toString()}`);
    if (preview === undefined) return el('p', { class: 'muted', 'data-testid': 'preview' }, 'no preview served');
    return el(
      'div',
      { 'data-testid': 'preview' },
      el('strong', {}, `next ${preview.scheduledTimes.length} runs`),
      el(
        'span',
        { class: 'muted' },
        ` of ${preview.cron === undefined ? preview.rrule : `cron ${preview.cron}`} in ${preview.timezone}`,
      ),
      el(
        'ol',
        {},
        ...preview.scheduledTimes.map((at) =>
          el(
            'li',
            { 'data-testid': 'preview-slot', 'data-at': at },
            wallTime(at, preview.timezone),
            el('span', { class: 'muted' }, ` · yours: ${wallTime(at)}`),
          ),
        ),
      ),
    );
  } catch (error) {
    const text = error instanceof ActionError ? error.message : (error as Error).message;
    return el('p', { class: 'problem', 'data-testid': 'preview' }, `schedule refused — ${text}`);
  }
}
