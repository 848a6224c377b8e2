import { DefinitionState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import { DEFINITION_KIND, type DefinitionRecord } from '../domain/definition-records.js';
import { plannableDefinition } from '../domain/definition-directory.js';
import { isQuarantined, type EngineServices } from '../domain/services.js';
import { planSlotOccurrence } from '../domain/slot-occurrence.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { PLANNING_LOOKBACK_DAYS } from '../domain/occurrence-input.js';
import type { SlotSchedule } from '../schedule/zoned-schedule.js';

const DAY_MS = 86_400_000;
import { commandStep, notFound } from './operator-lookups.js';

/** The most slots one backfill plans: a longer range is several commands, each its own bounded commit. */
export const BACKFILL_MAX_SLOTS = 500;

/** Only an active, unquarantined definition is backfilled: its slots are claimed by the passes that follow. */
async function backfillable(ctx: CommandContext, automationId: string): Promise<DefinitionRecord> {
  const record = await ctx.tx.get<DefinitionRecord['data']>(DEFINITION_KIND, automationId);
  if (record === undefined) throw notFound('definition', automationId);
  const state = record.data.snapshot.value;
  if (state === DefinitionState.tombstoned)
    throw new ContractError('GONE_TOMBSTONED', `definition ${automationId} is tombstoned`, { automationId });
  if (state !== DefinitionState.active || (await isQuarantined(ctx.tx, automationId)))
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `definition ${automationId} is ${state === DefinitionState.active ? 'quarantined' : state}; only an active ` +
        'definition is backfilled',
      { automationId, state },
    );
  return record as DefinitionRecord;
}

/**
 * The range's bounds as instants: `from` at or before `until`, `until` not after now (the schedule plans those), and
 * `from` within the planning horizon: a slot's fence (its occurrence, then its key) is kept that long after the slot
 * and may be retired after, so an older slot could be planned a second time.
 */
function rangeOf(ctx: CommandContext): { from: number; until: number } {
  const { from, until } = ctx.envelope.payload as { from: string; until: string };
  const range = { from: Date.parse(from), until: Date.parse(until) };
  if (!(range.from <= range.until))
    throw new ContractError('VALIDATION_FAILED', `from ${from} is after until ${until}`, { field: 'payload.from' });
  if (range.until > Date.parse(ctx.now))
    throw new ContractError('VALIDATION_FAILED', `until ${until} is in the future; the schedule plans those slots`, {
      field: 'payload.until',
    });
  const horizon = Date.parse(ctx.now) - PLANNING_LOOKBACK_DAYS * DAY_MS;
  if (range.from < horizon)
    throw new ContractError(
      'VALIDATION_FAILED',
      `from ${from} is more than ${PLANNING_LOOKBACK_DAYS} days ago: a slot that old may have run and had its fence ` +
        'retired, so backfilling it could run it twice',
      { field: 'payload.from', earliest: new Date(horizon).toISOString() },
    );
  return range;
}

/** The schedule's slots in [from, until], oldest first, walked one at a time and stopped past `max`. */
function slotsIn(schedule: SlotSchedule, from: number, until: number, max: number): Date[] {
  const slots: Date[] = [];
  for (let slot = schedule.nextAfter(new Date(from - 1)); slot !== null && slot.getTime() <= until;) {
    slots.push(slot);
    if (slots.length > max) break;
    slot = schedule.nextAfter(slot);
  }
  return slots;
}

/**
 * x-coven-automata.definition.backfill.v1: plans an occurrence for every slot of the definition's schedule in
 * [from, until] that never had one, at most {@link BACKFILL_MAX_SLOTS}, in one commit. Idempotent: a slot already
 * planned (now, earlier, or compacted long ago) is left as it is, so a slot has one occurrence, ever. Backfilled
 * occurrences are due at once and run one at a time, oldest first, waiting while the automation is busy.
 */
export async function backfill(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  const record = await backfillable(ctx, automationId);
  const { from, until } = rangeOf(ctx);
  const { terms } = plannableDefinition(record);
  const slots = slotsIn(svc.schedule(terms), from, until, BACKFILL_MAX_SLOTS);
  if (slots.length > BACKFILL_MAX_SLOTS)
    throw new ContractError(
      'VALIDATION_FAILED',
      `the range holds more than ${BACKFILL_MAX_SLOTS} slots, the most one backfill plans: split it`,
      { field: 'payload.until', max: BACKFILL_MAX_SLOTS },
    );
  const step = commandStep(ctx);
  const planned: string[] = [];
  for (const slot of slots) {
    const occurrenceId = await planSlotOccurrence(step, terms, slot, { collapsed: false, backfilledAt: ctx.now });
    if (occurrenceId !== undefined) planned.push(occurrenceId);
  }
  return {
    automationId,
    result: {
      automationId,
      slots: slots.map((s) => s.toISOString()),
      planned,
      alreadyPlanned: slots.length - planned.length,
    },
  };
}
