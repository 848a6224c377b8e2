import { forEachConcurrently } from '../engine/concurrency.js';
import { appendEvent } from '../changefeed/event-envelope.js';
import { DEFINITION_KIND, type DefinitionRecord } from '../command-handler/definition-commands.js';
import type { AutomationDefinition } from '../command-handler/definition-body.js';
import { createExecutionEntity, type StepContext } from '../engine/lifecycle.js';
import { KINDS, type OccurrenceAttributes } from '../engine/records.js';
import { isQuarantined, type EngineServices } from '../engine/services.js';
import { forEachPage } from '../store/store.js';
import type { OccurrenceInput } from '../guards/occurrence.js';
import { entityState } from '../actors/entity-transition.js';

/** Planning never looks further back than this; older missed slots are out of the misfire window. */
export const PLANNING_LOOKBACK_DAYS = 15;
const DAY_MS = 86_400_000;

export const occurrenceIdFor = (automationId: string, slot: Date) => `${automationId}-${slot.getTime()}`;
export const occurrenceKeyFor = (automationId: string, slot: Date) => `${automationId}@${slot.toISOString()}`;

/** The machine input of a new occurrence: everything its guards need, pinned from one definition revision. */
export function occurrenceInput(occurrenceId: string, definition: AutomationDefinition, scheduledFor: string): OccurrenceInput {
  return {
    occurrenceId,
    automationId: definition.automationId,
    automationRevision: definition.revision,
    definitionDigest: definition.integrity.value,
    scheduledFor,
    retryPolicy: {
      maxAttempts: definition.policies.retry.maxAttempts,
      backoffPolicy: definition.policies.retry.backoffPolicy,
      ...(definition.policies.retry.backoffSeconds === undefined ? {} : { backoffSeconds: definition.policies.retry.backoffSeconds }),
      retryableClasses: definition.policies.retry.retryableClasses ?? [],
    },
    perRunMinutes: definition.policies.timeout.perRunMinutes,
    operatorHold: true,
  };
}

/**
 * Plans the latest due slot of one active definition (misfire `latest`): slots after the last planned one
 * (and after activation, and within the lookback) up to now collapse into the newest, and the collapsed
 * ones are recorded as `occurrence.misfire_recorded` — never silently dropped, never backfilled.
 * Returns the new occurrence id, if one was planned.
 */
export async function planLatestSlot(svc: EngineServices, step: StepContext, definitionRecord: DefinitionRecord): Promise<string | undefined> {
  const plannable = entityState(definitionRecord) === 'active' || (svc.faults.planTombstoned && entityState(definitionRecord) === 'tombstoned');
  if (!plannable) return undefined;
  const automationId = definitionRecord.id;
  if (await isQuarantined(step.tx, automationId)) return undefined;
  const definition = definitionRecord.data.attributes.definition;
  const now = new Date(step.now);
  const cursor = await step.tx.get<{ lastSlot: string }>(KINDS.planCursor, automationId);
  const lowerBound = Math.max(planningBase(definitionRecord, cursor?.data.lastSlot), now.getTime() - PLANNING_LOOKBACK_DAYS * DAY_MS);
  const schedule = svc.schedule(definition.trigger.schedule.rrule, definition.trigger.schedule.timezone);
  const slots = schedule.slotsBetween(new Date(lowerBound), now);
  const latest = slots.at(-1);
  if (latest === undefined) return undefined;
  await step.tx.put(KINDS.planCursor, automationId, { lastSlot: latest.toISOString() }, { expectedVersion: cursor?.version ?? null });

  const key = occurrenceKeyFor(automationId, latest);
  const occurrenceId = occurrenceIdFor(automationId, latest);
  if (await slotTaken(step, occurrenceId, key)) return undefined;
  const collapsed = slots.slice(0, -1).map((d) => d.toISOString());
  const attributes: OccurrenceAttributes = {
    automationId,
    automationRevision: definition.revision,
    definitionDigest: definition.integrity,
    occurrenceKey: key,
    scheduledFor: latest.toISOString(),
    triggerIdentity: { kind: 'schedule.slot', rruleRef: definition.trigger.schedule.rrule },
    stateReason: 'slot_fenced',
    misfireDisposition: collapsed.length > 0 ? 'collapsed_to_latest' : 'none',
    createdAt: step.now,
    updatedAt: step.now,
    observedAt: step.now,
    held: false,
  };
  await createExecutionEntity(step, 'occurrence', occurrenceId, occurrenceInput(occurrenceId, definition, latest.toISOString()), attributes, 'slot_fenced');
  if (collapsed.length > 0) {
    await appendEvent(step.tx, step.feed, {
      stream: { kind: 'occurrence', id: occurrenceId },
      kind: 'occurrence.misfire_recorded',
      summary: `${collapsed.length} missed slot(s) of ${automationId} collapsed into ${latest.toISOString()}`,
      payload: { disposition: 'collapsed_to_latest', collapsedSlots: collapsed.slice(-4096) },
      automationId,
      occurrenceId,
    });
  }
  return occurrenceId;
}

/**
 * One occurrence per slot: a second planner (another engine) finds the slot taken and plans nothing. A
 * scheduled occurrence's id is derived from its slot, so its record fences the slot while it exists; the
 * slot's key record is written only when retention compacts the occurrence (see compaction.ts). Writing the
 * key at planning cost a burst one more random index leaf per occurrence (1000 due on 100k history: COMMIT
 * time −25 %); stores written before keep their keys, which this reads too.
 */
async function slotTaken(step: StepContext, occurrenceId: string, key: string): Promise<boolean> {
  return (await step.tx.get(KINDS.occurrence, occurrenceId)) !== undefined || (await step.tx.get(KINDS.occurrenceKey, key)) !== undefined;
}

/** Slots after this instant (epoch ms) are the definition's to plan: after activation and after the last planned one. */
function planningBase(definitionRecord: DefinitionRecord, lastSlot: string | undefined): number {
  const attributes = definitionRecord.data.attributes;
  return Math.max(Date.parse(attributes.scheduleEffectiveFrom ?? attributes.createdAt) - 1, lastSlot === undefined ? -Infinity : Date.parse(lastSlot));
}

/** The first slot the definition has not planned yet (epoch ms); null when none falls within 15 days of the last. */
export function nextUnplannedSlot(svc: EngineServices, record: DefinitionRecord, lastSlot: string | undefined): number | null {
  const { automationId, revision, trigger } = record.data.attributes.definition;
  return svc.firstSlotAfter(automationId, revision, trigger.schedule.rrule, trigger.schedule.timezone, planningBase(record, lastSlot));
}

/**
 * False only when the definition's next slot is provably still ahead, so a pass skips it without opening a
 * transaction (most definitions, most passes). Anything else goes to {@link planLatestSlot}, which decides.
 */
function mayBeDue(svc: EngineServices, record: DefinitionRecord, lastSlot: string | undefined, now: number): boolean {
  const next = nextUnplannedSlot(svc, record, lastSlot);
  return next === null || next <= now;
}

/** Definitions read per page when a pass looks for due ones: bounds what a pass holds at once. */
export const DEFINITION_PAGE = 500;

/**
 * The definition as the planning transaction sees it: the copy the pass read, when its version is still the
 * current one (nearly always), else read again. Definitions are never deleted (tombstoning is a state), so
 * a version names one content. Reading and parsing each definition again inside its transaction cost
 * ≈ 10 % of a 1000-plan burst (side by side, 1k history: 200–240 -> 180–210 ms per batch).
 */
async function currentDefinition(step: StepContext, seen: DefinitionRecord): Promise<DefinitionRecord | undefined> {
  const version = await step.tx.version(DEFINITION_KIND, seen.id);
  if (version === seen.version) return seen;
  return version === undefined ? undefined : ((await step.tx.get<DefinitionRecord['data']>(DEFINITION_KIND, seen.id)) as DefinitionRecord | undefined);
}

/** Plans every active definition with a due slot, one transaction each. Returns the ids of the occurrences planned. */
export async function planDueSlots(svc: EngineServices, errors: Error[] = []): Promise<string[]> {
  const now = svc.clock.now().getTime();
  const planned: string[] = [];
  // A page at a time: the pass holds one page of definitions, and the copies it read serve the planning
  // transactions (see currentDefinition).
  await svc.store.read(async (r) => {
    const cursors = new Map((await r.list<{ lastSlot: string }>(KINDS.planCursor)).map((c) => [c.id, c.data.lastSlot]));
    await forEachPage<DefinitionRecord['data']>(r, DEFINITION_KIND, DEFINITION_PAGE, async (page) => {
      const due = (page as DefinitionRecord[]).filter((record) => {
        const active = record.data.snapshot.value === 'active' || (svc.faults.planTombstoned && record.data.snapshot.value === 'tombstoned');
        return active && mayBeDue(svc, record, cursors.get(record.id), now);
      });
      await forEachConcurrently(due, svc.passConcurrency, async (seen) => {
        try {
          const id = await svc.step(async (step) => {
            const fresh = await currentDefinition(step, seen);
            return fresh === undefined ? undefined : planLatestSlot(svc, step, fresh);
          });
          if (id !== undefined) planned.push(id);
        } catch (error) {
          errors.push(new Error(`scheduler: planning ${seen.id}: ${(error as Error).message}`, { cause: error }));
        }
      });
    });
  });
  return planned;
}
