import { DefinitionState, OccurrenceState } from '../../machines/index.js';
import type { LiveWork, StoreReader } from '../store/store.js';
import { WorkPartition } from '../domain/work-partition.js';
import { nextUnplannedSlot } from '../scheduler/planning.js';
import type { EngineServices } from '../domain/services.js';

/** How often running sessions are observed: the runtimes report by being asked. */
export const OBSERVE_INTERVAL_MS = 1_000;
/** The longest the loop sleeps without looking, so a clock jump or a missed wake-up costs at most this. */
export const MAX_SLEEP_MS = 60_000;

/**
 * When eligible work needs a pass: now when it is this engine's and no pass holds it back; when its rate window
 * reopens, or at the next commit (null), when one does; within a second when it is another live engine's (which
 * claims it; this engine only looks again, so it notices that engine's share passing to it).
 */
function eligibleWake(svc: EngineServices, work: LiveWork, share: WorkPartition, now: number): number | null {
  if (!share.mine(work.automationId ?? work.id, work.claimedBy)) return now + OBSERVE_INTERVAL_MS;
  const held = svc.waitingWork.heldUntil(work.id);
  return held === undefined ? now : held;
}

/**
 * The next instant a pass has something to do: a running session to observe soon, else the earliest of
 * the next due slot, a lease expiry, a run deadline or a retry's backoff end. Never later than MAX_SLEEP_MS.
 */
export async function nextWakeAt(svc: EngineServices, reader: StoreReader): Promise<Date> {
  const now = svc.clock.now().getTime();
  let wake = now + MAX_SLEEP_MS;
  const consider = (instant: string | number | null | undefined) => {
    const t = typeof instant === 'number' ? instant : instant == null ? Number.NaN : Date.parse(instant);
    if (!Number.isNaN(t)) wake = Math.min(wake, Math.max(t, now));
  };
  if ((await reader.liveWork('attempt')).length > 0) consider(now + OBSERVE_INTERVAL_MS);
  const eligible = new Set<string>();
  const share = await WorkPartition.read(svc, reader);
  for (const work of await reader.liveWork('occurrence')) {
    const state = work.state;
    if (state === OccurrenceState.planned) consider(work.notBefore ?? work.scheduledFor);
    if (state === OccurrenceState.eligible) {
      eligible.add(work.id);
      consider(eligibleWake(svc, work, share, now));
      // Held eligible work's deadline is its claim's to act on: waking for it would only find it held again.
      continue;
    }
    // A lease that already lapsed is not a wake-up: its launch was decided, or a live sender still owns it.
    const leaseEnd = work.leaseExpiresAt === null ? Number.NaN : Date.parse(work.leaseExpiresAt) + 1;
    if ((state === OccurrenceState.claimed || state === OccurrenceState.dispatching) && leaseEnd > now)
      consider(leaseEnd);
    if (work.deadlineAt !== null) consider(work.deadlineAt);
  }
  svc.waitingWork.retain(eligible);
  const cursors = new Map((await svc.planCursors.current(reader)).map((c) => [c.id, c.lastSlot]));
  for (const definition of await svc.definitions.current(reader)) {
    if (definition.state !== DefinitionState.active) continue;
    // Remembered between passes. A slot already due yet unplanned after a pass means its planning failed or was
    // passed over (a quarantined definition is still planned, then skipped): sleeping to the slot after it left
    // the burst's remainder waiting out MAX_SLEEP_MS when no other engine's commit woke this one.
    const next = nextUnplannedSlot(svc, definition, cursors.get(definition.id));
    if (next !== null && next > now) consider(next);
    else if (next !== null) consider(now + OBSERVE_INTERVAL_MS);
    else consider(svc.schedule(definition.terms).nextAfter(new Date(now))?.getTime());
  }
  return new Date(wake);
}
