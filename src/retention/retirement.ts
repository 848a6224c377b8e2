import { advanceFeedHorizon } from '../changefeed/changefeed.js';
import type { StepContext } from '../domain/lifecycle.js';
import { runIdFor } from '../domain/ids.js';
import { PLANNING_LOOKBACK_DAYS } from '../domain/occurrence-input.js';
import { KINDS, type OccurrenceRecord } from '../domain/records.js';
import { AFTER_INSTANT, RETIRE_QUEUE_KIND, queueId, type RetireDue } from '../domain/retention-queue.js';
import type { EngineServices } from '../domain/services.js';
import type { StoreTransaction } from '../store/store.js';
import type { RetentionPolicy } from './policy.js';

const DAY_MS = 86_400_000;
/**
 * A slot's key fences it while the planner could still reach it: planning looks back PLANNING_LOOKBACK_DAYS,
 * and a day more covers another engine whose clock runs behind.
 */
const SLOT_FENCE_MS = (PLANNING_LOOKBACK_DAYS + 1) * DAY_MS;
/** A stream holding the feed's newest entry stays (the store refuses it): looked at again a day later. */
const NEWEST_POSTPONE_MS = DAY_MS;
/** `meta/retirement-backfill`: present once every occurrence compacted before retirement existed is queued. */
const BACKFILLED = { kind: 'meta', id: 'retirement-backfill' } as const;

/**
 * Queues the compacted occurrence's streams for retirement, in the transaction that compacted it: after the
 * snapshot window, and for a scheduled slot not before the planner has passed it for good.
 */
export async function queueRetirement(
  step: StepContext,
  policy: RetentionPolicy,
  occurrence: OccurrenceRecord,
  runIds: string[],
): Promise<void> {
  const a = occurrence.data.attributes;
  const afterSnapshots = Date.parse(step.now) + policy.snapshotMs;
  const slotPassed = a.triggerIdentity.kind === 'schedule.slot' ? Date.parse(a.scheduledFor) + SLOT_FENCE_MS : 0;
  const retireAt = new Date(Math.max(afterSnapshots, slotPassed)).toISOString();
  const due: RetireDue = {
    occurrenceId: occurrence.id,
    retireAt,
    streams: [`occurrence/${occurrence.id}`, ...runIds.map((id) => `run/${id}`)],
    occurrenceKey: a.occurrenceKey,
  };
  await step.tx.put(RETIRE_QUEUE_KIND, queueId(retireAt, occurrence.id), due, { expectedVersion: null });
  if ((await step.tx.version(BACKFILLED.kind, BACKFILLED.id)) === undefined)
    await step.tx.put(BACKFILLED.kind, BACKFILLED.id, { at: step.now }, { expectedVersion: null });
}

const BACKFILL_PAGE = 500;

/** The slot a scheduled occurrence's key names (`<automationId>@<instant>`), or 0 for a manual request's key. */
function slotOfKey(key: string): number {
  const named = key.slice(key.lastIndexOf('@') + 1);
  // Date.parse is lenient with other text: only an instant as occurrenceKeyFor writes it is a slot.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(named)) return 0;
  return Date.parse(named);
}

/**
 * Stores compacted before retirement existed hold compacted occurrences that were never queued for it: their
 * slot keys, whose occurrence is gone, name them. The first sweep queues each (streams: the occurrence's and
 * its run's), a page per transaction, then marks the store so no later sweep looks again.
 */
export async function backfillRetirements(svc: EngineServices, policy: RetentionPolicy): Promise<void> {
  if ((await svc.store.read((r) => r.get(BACKFILLED.kind, BACKFILLED.id))) !== undefined) return;
  let after: string | undefined;
  for (;;) {
    const page = await svc.store.read((r) =>
      r.list<{ occurrenceId: string }>(KINDS.occurrenceKey, {
        ...(after === undefined ? {} : { after }),
        limit: BACKFILL_PAGE,
      }),
    );
    // No slot keys at all: nothing compacted yet, and no write (an idle pass opens no transaction). The first
    // compaction marks the store (queueRetirement), so its key is never queued twice.
    if (page.length === 0 && after === undefined) return;
    await svc.step(async (step) => {
      for (const key of page) {
        const occurrenceId = key.data.occurrenceId;
        if ((await step.tx.version(KINDS.occurrence, occurrenceId)) !== undefined) continue;
        const retireAt = new Date(
          Math.max(Date.parse(step.now) + policy.snapshotMs, slotOfKey(key.id) + SLOT_FENCE_MS),
        ).toISOString();
        const id = queueId(retireAt, occurrenceId);
        if ((await step.tx.version(RETIRE_QUEUE_KIND, id)) !== undefined) continue;
        const due: RetireDue = {
          occurrenceId,
          retireAt,
          streams: [`occurrence/${occurrenceId}`, `run/${runIdFor(occurrenceId)}`],
          occurrenceKey: key.id,
        };
        await step.tx.put(RETIRE_QUEUE_KIND, id, due, { expectedVersion: null });
      }
      if (page.length < BACKFILL_PAGE && (await step.tx.version(BACKFILLED.kind, BACKFILLED.id)) === undefined)
        await step.tx.put(BACKFILLED.kind, BACKFILLED.id, { at: step.now }, { expectedVersion: null });
    });
    if (page.length < BACKFILL_PAGE) return;
    after = page.at(-1)!.id;
  }
}

/** The position of a stream's newest entry, or undefined for a stream with none. */
async function newestPosition(tx: StoreTransaction, stream: string): Promise<number | undefined> {
  const head = await tx.head(stream);
  if (head === 0) return undefined;
  return (await tx.readLog(stream, { after: head - 2, limit: 1 }))[0]?.position;
}

export type RetireOutcome = 'retired' | 'postponed' | 'skipped';

/**
 * Retires one queued occurrence's streams whole and removes its slot key. What a consumer could still learn
 * from them it learns no more: the feed horizon moves past the removed entries, so a feed cursor behind them
 * is told (CURSOR_EXPIRED) rather than silently skipped ahead.
 */
export async function retireOne(step: StepContext, entryId: string): Promise<RetireOutcome> {
  const fresh = await step.tx.get<RetireDue>(RETIRE_QUEUE_KIND, entryId);
  if (fresh === undefined) return 'skipped';
  const due = fresh.data;
  const newest: number[] = [];
  for (const stream of due.streams) {
    const position = await newestPosition(step.tx, stream);
    if (position === undefined) continue;
    if ((await step.tx.readFeed({ after: position, limit: 1 })).length === 0) {
      const later = new Date(Date.parse(step.now) + NEWEST_POSTPONE_MS).toISOString();
      await step.tx.delete(RETIRE_QUEUE_KIND, entryId, fresh.version);
      await step.tx.put(
        RETIRE_QUEUE_KIND,
        queueId(later, due.occurrenceId),
        { ...due, retireAt: later },
        {
          expectedVersion: null,
        },
      );
      return 'postponed';
    }
    newest.push(position);
  }
  for (const stream of due.streams) await step.tx.retireLog(stream);
  if (newest.length > 0) await advanceFeedHorizon(step.tx, Math.max(...newest));
  const key = await step.tx.get(KINDS.occurrenceKey, due.occurrenceKey);
  if (key !== undefined) await step.tx.expire(KINDS.occurrenceKey, due.occurrenceKey, key.version);
  await step.tx.delete(RETIRE_QUEUE_KIND, entryId, fresh.version);
  return 'retired';
}

/** The queued retirements due now, oldest first, at most `limit`. */
export async function dueRetirements(svc: EngineServices, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const now = svc.clock.now().toISOString();
  return (await svc.store.read((r) => r.versions(RETIRE_QUEUE_KIND, { before: `${now}${AFTER_INSTANT}`, limit }))).map(
    (v) => v.id,
  );
}
