import { DefinitionState } from '../../machines/index.js';
import { busyElsewhere, concurrencyGate, forEachConcurrently } from '../domain/concurrency.js';
import { appendEvent } from '../changefeed/append-event.js';
import type { StepContext } from '../domain/lifecycle.js';
import { FLOW_KINDS, FLOW_SETTINGS_ID } from '../domain/flow-limits.js';
import { DEFINITION_KIND, DEFINITION_REVISION_KIND, revisionId } from '../domain/definition-records.js';
import { KINDS } from '../domain/records.js';
import { isQuarantined, type EngineServices } from '../domain/services.js';
import { WorkPartition } from '../domain/work-partition.js';
import { planSlotOccurrence, slotReads } from '../domain/slot-occurrence.js';
import { chooseDueSlot, overlapOf, waitsWhileBusy, type OverlapExtension } from '../schedule/overlap-extension.js';
import type { PlannableDefinition, PlanningTerms } from '../domain/definition-directory.js';
import { PLANNING_LOOKBACK_DAYS, occurrenceIdFor, occurrenceKeyFor } from '../domain/occurrence-input.js';
import type { LaunchOutcome } from '../domain/launch-outcome.js';
import { reportLaunch } from '../domain/launch-commit.js';
import { commitPlan, type CarriedPlan, type PlanCarry } from './plan-carry.js';
const DAY_MS = 86_400_000;

/**
 * Plans a due slot of one active definition: by the contract's misfire `latest`, slots after the last planned one
 * (and after activation, and within the lookback) up to now collapse into the newest; the overlap extension's
 * catch-up window plans the oldest within it (or the latest) and passes over those beyond it (see
 * {@link chooseDueSlot}), and while the automation is busy its slots wait unplanned ({@link waitsWhileBusy}).
 * Slots passed over are recorded as `occurrence.misfire_recorded` — never silently dropped.
 * Returns the new occurrence id, if one was planned.
 */
export async function planLatestSlot(
  svc: EngineServices,
  step: StepContext,
  plannable: PlannableDefinition,
): Promise<string | undefined> {
  if (plannable.state !== DefinitionState.active) return undefined;
  const automationId = plannable.id;
  if (await isQuarantined(step.tx, automationId)) return undefined;
  const definition = plannable.terms;
  const now = new Date(step.now);
  const cursor = await step.tx.get<{ lastSlot: string }>(KINDS.planCursor, automationId);
  const lowerBound = Math.max(
    planningBase(plannable, cursor?.data.lastSlot),
    now.getTime() - PLANNING_LOOKBACK_DAYS * DAY_MS,
  );
  const overlap = overlapOf(definition);
  const slots = candidateSlots(svc, definition, overlap, lowerBound, now.getTime());
  if (slots.length === 0) return undefined;
  if (waitsWhileBusy(overlap) && (await step.tx.liveWork(KINDS.occurrence, { automationId })).length > 0)
    return undefined;
  const { plan: latest, passedOver } = chooseDueSlot(slots, now.getTime(), overlap);
  const moved = await step.tx.put(
    KINDS.planCursor,
    automationId,
    { lastSlot: (latest ?? slots.at(-1)!).toISOString() },
    { expectedVersion: cursor?.version ?? null },
  );
  step.afterCommit?.push(() => svc.planCursors.learn(moved));
  if (latest === undefined) {
    await recordMisfire(
      step,
      automationId,
      undefined,
      slots.at(-1)!,
      passedOver.map((d) => d.toISOString()),
    );
    return undefined;
  }

  const collapsed = passedOver.map((d) => d.toISOString());
  const occurrenceId = await planSlotOccurrence(step, definition, latest, { collapsed: collapsed.length > 0 });
  if (occurrenceId === undefined) {
    // The slot was taken (a backfill, another engine): the slots passed over for it are recorded all the same.
    if (collapsed.length > 0) await recordMisfire(step, automationId, undefined, latest, collapsed);
    return undefined;
  }
  if (collapsed.length > 0) await recordMisfire(step, automationId, occurrenceId, latest, collapsed);
  return occurrenceId;
}

/**
 * Records the missed slots that will not run, so none is silently dropped: on the occurrence they collapsed into,
 * or, when every due slot was beyond the catch-up window and none was planned, on the automation's stream.
 */
async function recordMisfire(
  step: StepContext,
  automationId: string,
  occurrenceId: string | undefined,
  latest: Date,
  collapsed: string[],
): Promise<void> {
  const summary =
    occurrenceId === undefined
      ? `${collapsed.length} missed slot(s) of ${automationId} up to ${latest.toISOString()} not run`
      : `${collapsed.length} missed slot(s) of ${automationId} collapsed into ${latest.toISOString()}`;
  await appendEvent(step.tx, step.feed, {
    stream:
      occurrenceId === undefined ? { kind: 'automation', id: automationId } : { kind: 'occurrence', id: occurrenceId },
    kind: 'occurrence.misfire_recorded',
    summary,
    payload: { disposition: 'collapsed_to_latest', collapsedSlots: collapsed.slice(-4096) },
    automationId,
    ...(occurrenceId === undefined ? {} : { occurrenceId }),
  });
}

/**
 * The due slots planning chooses among: all of (after, now], or, catching up oldest first, those before the window and
 * the first within it — each pass plans one, so expanding the whole window at every pass would cost its square.
 */
function candidateSlots(
  svc: EngineServices,
  definition: PlanningTerms,
  overlap: OverlapExtension | undefined,
  after: number,
  now: number,
): Date[] {
  const catchUp = overlap?.catchUp;
  if (catchUp?.order !== 'oldest-first') return dueSlots(svc, definition, after, now);
  const windowStart = now - catchUp.windowMinutes * 60_000;
  const schedule = svc.schedule(definition);
  const beyond = after < windowStart - 1 ? schedule.slotsBetween(new Date(after), new Date(windowStart - 1)) : [];
  const first = schedule.nextAfter(new Date(Math.max(after, windowStart - 1)));
  return first !== null && first.getTime() <= now ? [...beyond, first] : beyond;
}

/**
 * The slots in (after, now], oldest first. Nearly always exactly one is due: its first slot is the one the
 * pass already asked for (remembered), and asking for the slot after it both proves it alone and is the
 * question the next pass asks (remembered in turn) — one schedule expansion per plan instead of two (see
 * docs/performance.md). When more are due (a misfire), the whole window is expanded at once.
 */
function dueSlots(svc: EngineServices, definition: PlanningTerms, after: number, now: number): Date[] {
  const { automationId, revision } = definition;
  const first = svc.firstSlotAfter(automationId, revision, definition, after);
  if (first === null || first > now) return [];
  const second = svc.firstSlotAfter(automationId, revision, definition, first);
  if (second === null || second > now) return [new Date(first)];
  return svc.schedule(definition).slotsBetween(new Date(after), new Date(now));
}

/**
 * The records planning reads to know whether the definition's first unplanned slot (epoch ms) is taken: asked for
 * with the automation's other planning reads, they cost a store where each read is a round trip none of its own.
 * A guess only: a misfire or a cursor moved since the pass's listing plans another slot, asked for then.
 */
const firstSlotReads = (automationId: string, next: number | null) =>
  next === null
    ? []
    : slotReads(occurrenceIdFor(automationId, new Date(next)), occurrenceKeyFor(automationId, new Date(next)));

/**
 * Slots after this instant (epoch ms) are the definition's to plan: after activation and after the last planned
 * one.
 */
function planningBase(definition: PlannableDefinition, lastSlot: string | undefined): number {
  return Math.max(definition.plannableAfter, lastSlot === undefined ? -Infinity : Date.parse(lastSlot));
}

/** The first slot the definition has not planned yet (epoch ms); null when none falls within 15 days of the last. */
export function nextUnplannedSlot(
  svc: EngineServices,
  definition: PlannableDefinition,
  lastSlot: string | undefined,
): number | null {
  const { automationId, revision } = definition.terms;
  return svc.firstSlotAfter(automationId, revision, definition.terms, planningBase(definition, lastSlot));
}

/**
 * How long a due slot is left to the engine whose share it is before any engine plans it. Long enough for a burst's
 * owners to reach their own slots in their first pass, short next to a lease (15 s), which is how long an engine on
 * another host takes to be known dead.
 */
export const PLAN_STEAL_AFTER_MS = 2_000;

/** The records of an automation its planning reads: its definition, quarantine and plan cursor. */
const PLANNING_READS = [DEFINITION_KIND, KINDS.quarantine, KINDS.planCursor];

/** What planning did in one pass. */
export interface PlanningReport {
  /** The occurrences planned. */
  planned: string[];
  /** How many of them were claimed in their planning commit (see {@link PlanCarry}). */
  claimed: number;
  /** The launches of those carried to a launch, in the order they were sent. */
  launches: LaunchOutcome[];
}

/**
 * Plans every active definition with a due slot, one transaction each, carrying each occurrence planned as far as
 * `carry` says in that same transaction (see {@link PlanCarry}); launches are sent once their commits are durable,
 * at most `svc.passConcurrency` at once.
 */
export async function planDueSlots(
  svc: EngineServices,
  errors: Error[] = [],
  partition?: WorkPartition,
  carry?: PlanCarry,
): Promise<PlanningReport> {
  const now = svc.clock.now().getTime();
  const report: PlanningReport = { planned: [], claimed: 0, launches: [] };
  const sending = concurrencyGate(svc.passConcurrency);
  const due = await svc.store.read(async (r) => {
    const cursors = new Map((await svc.planCursors.current(r)).map((c) => [c.id, c.lastSlot]));
    // Engines sharing the store each plan their share of the automations (see WorkPartition), and any slot left
    // unplanned past PLAN_STEAL_AFTER_MS: its engine died or is slow, or the engines disagree on who is live.
    const share = partition ?? (await WorkPartition.read(svc, r));
    return (await svc.definitions.current(r)).flatMap((seen) => {
      if (seen.state !== DefinitionState.active) return [];
      const next = nextUnplannedSlot(svc, seen, cursors.get(seen.id));
      if (next !== null && next > now) return [];
      return share.mine(seen.id) || next === null || next <= now - PLAN_STEAL_AFTER_MS ? [{ seen, next }] : [];
    });
  });
  if (due.length > 0) await carry?.beforePlanning();
  await forEachConcurrently(due, svc.planConcurrency, async ({ seen, next }) => {
    let carried: CarriedPlan;
    try {
      carried = await commitPlan(svc, (step, carrying) => planDefinition(svc, step, seen, next, carrying), carry);
    } catch (error) {
      errors.push(new Error(`scheduler: planning ${seen.id}: ${(error as Error).message}`, { cause: error }));
      return;
    }
    const { occurrenceId, claimed, release } = carried;
    if (occurrenceId === undefined) return;
    report.planned.push(occurrenceId);
    if (claimed) report.claimed++;
    // What fails is reported as the dispatch phase reports it.
    if (release !== undefined)
      await reportLaunch(`occurrence ${occurrenceId}`, () => sending(release), report.launches, errors);
  });
  return report;
}

/**
 * One due definition's planning, in `step`'s transaction: the occurrence planned, if one was. `carrying`: the step
 * goes on to claim it (reading the automation's live occurrences) and, when `launched`, to accept its run (reading the
 * pinned revision).
 */
async function planDefinition(
  svc: EngineServices,
  step: StepContext,
  seen: PlannableDefinition,
  next: number | null,
  carrying: PlanCarry['through'] | undefined,
): Promise<string | undefined> {
  // What planning reads of the automation and of the slot it will likely plan, what its feed entry needs, and what
  // the carry reads next, in one statement where each read is a round trip (the lock below then knows from it if
  // the cursor exists). The revision is the one the pass saw: a revision since costs its own read.
  const revision =
    carrying === 'launched' ? [[DEFINITION_REVISION_KIND, revisionId(seen.id, seen.terms.revision)] as const] : [];
  // A carried claim asks the store's flow limits first (flow-gates.ts).
  const limits = carrying === undefined ? [] : [[FLOW_KINDS.settings, FLOW_SETTINGS_ID] as const];
  await step.tx.prefetch?.(
    [
      ...PLANNING_READS.map((kind) => [kind, seen.id] as const),
      ...firstSlotReads(seen.id, next),
      ...revision,
      ...limits,
    ],
    [],
    { appending: true, ...(carrying === undefined ? {} : { liveOccurrencesOf: seen.id }) },
  );
  // Another engine is planning this automation now: its slot is planned once, by it.
  if (await busyElsewhere(svc, step.tx, KINDS.planCursor, seen.id)) return undefined;
  const fresh = await svc.definitions.inTransaction(step.tx, seen.id, seen);
  return fresh === undefined ? undefined : planLatestSlot(svc, step, fresh);
}
