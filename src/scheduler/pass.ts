import { DefinitionState, OccurrenceState } from '../../machines/index.js';
import type { LiveWork, StoreReader, StoreTransaction } from '../store/store.js';
import { storeStream } from '../changefeed/event-envelope.js';
import { DEFINITION_KIND } from '../domain/definition-records.js';
import { KINDS, type OccurrenceRecord } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import { FLOW_KINDS, FLOW_SETTINGS_ID, limitsOf } from '../domain/flow-limits.js';
import { WorkPartition } from '../domain/work-partition.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import { loadOccurrence } from '../domain/entities.js';
import { advanceOccurrence, claimWhenEligible, type SessionStop } from './occurrences.js';

/** What a pass knows of the definitions once, instead of per occurrence. */
export interface PassFacts {
  /** Each automation's definition: active or not, its revision, and its priority (x-coven-automata.limits.v1). */
  definitions: ReadonlyMap<string, { active: boolean; revision: number; priority: number }>;
  /** Automations with a quarantine record (quarantined now or earlier): their planned work is looked at. */
  quarantines: ReadonlySet<string>;
}

/** The pass's facts as `reader` holds them: the definitions from the engine's directory, the quarantine ids. */
export async function passFacts(svc: EngineServices, reader: StoreReader): Promise<PassFacts> {
  const definitions = new Map(
    (await svc.definitions.current(reader)).map((d) => [
      d.id,
      {
        active: d.state === DefinitionState.active,
        revision: d.terms.revision,
        priority: limitsOf(d.terms)?.priority ?? 0,
      },
    ]),
  );
  const quarantines = new Set((await reader.versions(KINDS.quarantine)).map((v) => v.id));
  return { definitions, quarantines };
}

/**
 * Whether the scheduler has anything to do for a live occurrence at `now` (epoch ms), judged from its live-work
 * summary alone, so a pass opens a transaction only for those: a deadline passed; planned work that came due,
 * is eligible, or whose definition stopped being active, was quarantined or revised; a claim whose lease lapsed;
 * recovery to determine. Running and recovery_required work waits for its deadline or for the operator; a state
 * this does not know is always looked at.
 */
export function needsAttention(work: LiveWork, now: number, facts: PassFacts): boolean {
  const passed = (instant: string | null) => instant !== null && Date.parse(instant) <= now;
  if (passed(work.deadlineAt)) return true;
  switch (work.state) {
    case OccurrenceState.eligible:
      return true;
    case OccurrenceState.planned: {
      const due =
        (work.scheduledFor === null || passed(work.scheduledFor)) &&
        (work.notBefore === null || passed(work.notBefore));
      return due || definitionMoved(work, facts);
    }
    case OccurrenceState.claimed:
    case OccurrenceState.dispatching:
      return work.leaseExpiresAt !== null && Date.parse(work.leaseExpiresAt) < now;
    case OccurrenceState.running:
    case OccurrenceState.recovery_required:
      return false;
    default:
      return true;
  }
}

/** Planned work whose definition is gone, not active, quarantined (now or once) or at a later revision. */
function definitionMoved(work: LiveWork, facts: PassFacts): boolean {
  if (work.automationId === null || work.automationRevision === null) return true;
  const definition = facts.definitions.get(work.automationId);
  return (
    definition === undefined ||
    !definition.active ||
    facts.quarantines.has(work.automationId) ||
    definition.revision > work.automationRevision
  );
}

/** How many due occurrences one set-based claim takes (PostgreSQL): one transaction, one commit for them all. */
export const CLAIM_BATCH = 32;

/**
 * A claim batch's occurrences, with what their claims read next (definition, quarantine) and the heads of the
 * streams their transitions append to, fetched for all of them at once where each read is a round trip: two
 * statements for the batch instead of about four per occurrence.
 */
async function loadBatch(tx: StoreTransaction, ids: readonly string[]): Promise<OccurrenceRecord[]> {
  await tx.prefetch?.(
    ids.map((id) => [KINDS.occurrence, id] as const),
    ids.map((id) => storeStream({ kind: 'occurrence', id })),
    { appending: true },
  );
  const occurrences: OccurrenceRecord[] = [];
  for (const id of ids) occurrences.push(await loadOccurrence(tx, id));
  const automations = [...new Set(occurrences.map((o) => o.data.attributes.automationId))];
  await tx.prefetch?.(
    [
      ...automations.flatMap((id) => [[DEFINITION_KIND, id] as const, [KINDS.quarantine, id] as const]),
      [FLOW_KINDS.settings, FLOW_SETTINGS_ID] as const,
    ],
    [],
  );
  return occurrences;
}

/**
 * Claims the occurrences due now in batches, on stores several engines share: one statement locks a batch
 * (rows another engine holds are skipped, see {@link StoreTransaction.lockDueOccurrences}) and each locked
 * occurrence's claim is then its machine's transition, all in one transaction. Returns the ids taken; a batch
 * that fails is rolled back whole and left to the one-occurrence-per-transaction path, which reports errors.
 */
async function claimDueInBatches(svc: EngineServices, partition: WorkPartition | undefined): Promise<void> {
  // Work a pass held back (a limit, its turn) is not locked again until something may have freed it.
  const taken: string[] = [...svc.waitingWork.heldAt(svc.clock.now().getTime())];
  // Another live engine's share is its to claim: taken here, it would only be passed over there while this
  // transaction holds it. Automations this engine has not heard of yet are anyone's, as before the partition.
  const othersShare = partition === undefined ? [] : svc.definitions.knownIds().filter((id) => !partition.mine(id));
  for (;;) {
    let locked: string[] = [];
    try {
      await svc.step(async (step) => {
        locked = (await step.tx.lockDueOccurrences?.(step.now, CLAIM_BATCH, taken, othersShare)) ?? [];
        for (const occurrence of await loadBatch(step.tx, locked))
          await claimWhenEligible(svc, step, occurrence, 'batch');
      });
    } catch {
      return;
    }
    taken.push(...locked);
    if (locked.length < CLAIM_BATCH) return;
  }
}

/**
 * The pass's work in the order its claims are made: higher priority first, then the earlier due, then by id, so
 * work a limit governs is claimed best-ranked first when the limit lets only some of it through.
 */
function rankedForClaims(due: LiveWork[], facts: PassFacts): LiveWork[] {
  const priority = (work: LiveWork) => facts.definitions.get(work.automationId ?? '')?.priority ?? 0;
  const slot = (work: LiveWork) => work.scheduledFor ?? '';
  return due.sort(
    (a, b) => priority(b) - priority(a) || (slot(a) < slot(b) ? -1 : slot(a) > slot(b) ? 1 : a.id < b.id ? -1 : 1),
  );
}

/**
 * Every live occurrence the pass has something to do for (see {@link needsAttention}), one transaction each,
 * after the set-based claims where the store has them; one occurrence's failure is reported and does not stop
 * the others. Returns the sessions to stop once those commits are durable.
 */
export async function advanceAll(
  svc: EngineServices,
  errors: Error[] = [],
  evidenceUndecided: ReadonlySet<string> = new Set(),
  partition?: WorkPartition,
  claimWanted = true,
): Promise<SessionStop[]> {
  const stops: SessionStop[] = [];
  // The claim is a write transaction, queued behind every other commit: a pass asks for it only when its first
  // read found something due or it planned something itself (pass-phases.ts).
  if (svc.store.sharedByEngines === true && claimWanted) await claimDueInBatches(svc, partition);
  const now = svc.clock.now().getTime();
  const { live, facts, share } = await svc.store.read(async (r) => {
    const share = partition ?? (await WorkPartition.read(svc, r));
    const live = await r.liveWork(KINDS.occurrence, { exceptHeldBy: share.others });
    return { live, facts: await passFacts(svc, r), share };
  });
  const held = svc.waitingWork.heldAt(now);
  const due = rankedForClaims(
    live.filter(
      (work) =>
        share.mine(work.automationId ?? work.id, work.claimedBy) &&
        !held.has(work.id) &&
        needsAttention(work, now, facts),
    ),
    facts,
  );
  await forEachConcurrently(due, svc.passConcurrency, async ({ id }) => {
    const mine: SessionStop[] = [];
    try {
      await svc.step((step) => advanceOccurrence(svc, step, id, mine, evidenceUndecided));
      stops.push(...mine);
    } catch (error) {
      errors.push(new Error(`scheduler: occurrence ${id}: ${(error as Error).message}`, { cause: error }));
    }
  });
  return stops;
}
