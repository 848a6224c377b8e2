import { ATTEMPT_TERMINAL_STATES } from '../../machines/index.js';
import { PENDING_DELIVERY_INDEX } from '../domain/delivery.js';
import { appendEvent } from '../changefeed/append-event.js';
import { readEventLog } from '../changefeed/stored-event.js';
import { storeStream, type StreamRef } from '../changefeed/event-envelope.js';
import { advanceFeedHorizon } from '../changefeed/changefeed.js';
import { receiptIdFor } from '../domain/receipts.js';
import { forEachConcurrently } from '../domain/concurrency.js';
import type { StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import { forEachPage, type StoredRecord } from '../store/store.js';
import type { RetentionPolicy } from './policy.js';
import {
  AFTER_INSTANT,
  queueForRetention,
  queueId,
  retentionQueueKind,
  type RetentionDue,
} from '../domain/retention-queue.js';
import { outboxIdFor, runIdFor } from '../domain/ids.js';
import { expireAdoptions } from './adoption-expiry.js';
import { backfillRetirements, dueRetirements, queueRetirement, retireOne } from './retirement.js';
import { expireSessionOutputs, queueOutputExpiry } from './output-expiry.js';

/** Kept a day longer when something it holds is still live (it cannot be, once settled; never assumed). */
const POSTPONE_MS = 86_400_000;

/** `meta/retention-backfill`: present once every occurrence settled before retention existed is queued. */
const BACKFILLED = { kind: 'meta', id: 'retention-backfill' } as const;
/** Occurrences queued per backfill transaction: a page of the occurrence kind. */
const BACKFILL_PAGE = 500;

/**
 * Stores written before retention existed hold settled occurrences that were never queued. The first sweep
 * that finds settled occurrences queues them (settled at their last update; one already queued under another
 * instant is queued twice, and the second entry finds it gone), a page per transaction, then marks the store
 * so no later sweep looks again.
 */
async function backfillQueue(svc: EngineServices): Promise<void> {
  if ((await svc.store.read((r) => r.get(BACKFILLED.kind, BACKFILLED.id))) !== undefined) return;
  const pages: string[][] = [];
  await svc.store.read((r) =>
    forEachPage<OccurrenceRecord['data']>(r, KINDS.occurrence, BACKFILL_PAGE, (page) => {
      const settled = page.filter((o) => o.terminal).map((o) => o.id);
      if (settled.length > 0) pages.push(settled);
    }),
  );
  // Nothing settled yet: nothing to queue, and no write — an idle pass opens no transaction. (Until the first
  // settle, a sweep reads the few live occurrences; after it, the marker ends the look.)
  if (pages.length === 0) return;
  for (const ids of pages) {
    await svc.step(async (step) => {
      for (const id of ids) {
        const occurrence = (await step.tx.get(KINDS.occurrence, id)) as OccurrenceRecord | undefined;
        if (occurrence !== undefined) await queueForRetention(step, occurrence, occurrence.data.attributes.updatedAt);
      }
    });
  }
  await svc.step(async (step) => {
    if ((await step.tx.get(BACKFILLED.kind, BACKFILLED.id)) === undefined)
      await step.tx.put(BACKFILLED.kind, BACKFILLED.id, { at: step.now }, { expectedVersion: null });
  });
}

export interface CompactionReport {
  /** Occurrences compacted (with their runs, attempts and, unless kept longer, receipts). */
  occurrences: number;
  /** Queue entries of receipts kept past their occurrence that have now expired too. */
  receipts: number;
  /** Occurrences not settled for good yet (never expected once settled): looked at again a day later. */
  postponed: number;
  /** Queue entries another engine already handled. */
  skipped: number;
  /** Compacted occurrences whose streams were retired whole (their snapshot window over). */
  retired: number;
  /** Adoption records removed after their window. */
  adoptions: number;
  /** Outputs of compacted attempts' sessions their runtimes let go (this sweep's compactions, or earlier ones'). */
  outputs: number;
}

/**
 * One retention sweep: for each class with a finite window, compacts occurrences that settled longer ago
 * than the window, oldest first, at most `policy.perPass` in all, one transaction each.
 */
export async function compactExpiredHistory(
  svc: EngineServices,
  policy: RetentionPolicy,
  errors: Error[] = [],
): Promise<CompactionReport> {
  const report: CompactionReport = {
    occurrences: 0,
    receipts: 0,
    postponed: 0,
    skipped: 0,
    retired: 0,
    adoptions: 0,
    outputs: 0,
  };
  await backfillQueue(svc);
  await backfillRetirements(svc, policy);
  const now = svc.clock.now().getTime();
  let budget = policy.perPass;
  for (const retentionClass of policy.expiringClasses()) {
    if (budget <= 0) break;
    const cutoff = new Date(now - policy.windowMs(retentionClass)!).toISOString();
    const kind = retentionQueueKind(retentionClass);
    const due = await svc.store.read((r) =>
      r.list<RetentionDue>(kind, { before: `${cutoff}${AFTER_INSTANT}`, limit: budget }),
    );
    budget -= due.length;
    await forEachConcurrently(due, svc.passConcurrency, async (entry) => {
      try {
        const outcome = await svc.step((step) => compactOne(step, policy, retentionClass, entry));
        report[outcome]++;
      } catch (error) {
        errors.push(new Error(`retention: ${entry.data.occurrenceId}: ${(error as Error).message}`, { cause: error }));
      }
    });
  }
  await forEachConcurrently(await dueRetirements(svc, budget), svc.passConcurrency, async (entryId) => {
    try {
      const outcome = await svc.step((step) => retireOne(step, entryId));
      if (outcome === 'retired') report.retired++;
      else report[outcome]++;
    } catch (error) {
      errors.push(new Error(`retention: retiring ${entryId}: ${(error as Error).message}`, { cause: error }));
    }
  });
  budget -= report.retired;
  try {
    report.adoptions = await expireAdoptions(svc, policy, budget);
  } catch (error) {
    errors.push(new Error(`retention: adoption records: ${(error as Error).message}`, { cause: error }));
  }
  // After the compactions have committed: nothing reads these outputs any more.
  report.outputs = await expireSessionOutputs(svc, policy.perPass, errors);
  return report;
}

type Outcome = Exclude<keyof CompactionReport, 'outputs'>;

async function compactOne(
  step: StepContext,
  policy: RetentionPolicy,
  retentionClass: string,
  entry: StoredRecord<RetentionDue>,
): Promise<Outcome> {
  const kind = retentionQueueKind(retentionClass);
  const fresh = await step.tx.get<RetentionDue>(kind, entry.id);
  if (fresh === undefined) return 'skipped';
  const due = fresh.data;
  if (due.receiptIds !== undefined) {
    for (const id of due.receiptIds) await expireIfPresent(step, KINDS.receipt, id);
    await step.tx.delete(kind, entry.id, fresh.version);
    return 'receipts';
  }
  const occurrence = await step.tx.get<OccurrenceRecord['data']>(KINDS.occurrence, due.occurrenceId);
  if (occurrence === undefined) {
    await step.tx.delete(kind, entry.id, fresh.version);
    return 'skipped';
  }
  const history = await settledHistory(step, occurrence as OccurrenceRecord);
  if (history === undefined) {
    // Something of it is still live: look again later rather than remove what may still change.
    const later = new Date(Date.parse(due.settledAt) + POSTPONE_MS).toISOString();
    await step.tx.delete(kind, entry.id, fresh.version);
    await step.tx.put(kind, queueId(later, due.occurrenceId), { ...due, settledAt: later }, { expectedVersion: null });
    return 'postponed';
  }
  const keepReceipts = policy.outlives(due.receiptsClass, retentionClass);
  const receiptIds = await compactOccurrence(step, occurrence as OccurrenceRecord, history, keepReceipts);
  await queueRetirement(
    step,
    policy,
    occurrence as OccurrenceRecord,
    history.runs.map(({ run }) => run.id),
  );
  await step.tx.delete(kind, entry.id, fresh.version);
  if (receiptIds.length > 0) {
    await step.tx.put(
      retentionQueueKind(due.receiptsClass),
      queueId(due.settledAt, occurrence.id),
      { ...due, receiptIds },
      { expectedVersion: null },
    );
  }
  return 'occurrences';
}

/**
 * Compacts one occurrence with its runs and attempts: snapshot and trim of each stream, then every record
 * of it expired. Returns the receipts kept for their own, longer window.
 */
async function compactOccurrence(
  step: StepContext,
  occurrence: OccurrenceRecord,
  history: History,
  keepReceipts: boolean,
): Promise<string[]> {
  // Streams first: each keeps one snapshot event (the final state) and loses everything before it.
  const links = { automationId: occurrence.data.attributes.automationId, occurrenceId: occurrence.id };
  // Missed slots stay visibly explained after compaction (zero silent loss): the snapshot keeps them.
  const collapsedSlots = (await readEventLog(step.tx, { kind: 'occurrence', id: occurrence.id }))
    .filter((e) => e.data.kind === 'occurrence.misfire_recorded')
    .flatMap((e) => e.data.payload.collapsedSlots as string[]);
  await snapshotAndTrim(
    step,
    { kind: 'occurrence', id: occurrence.id },
    { occurrence: finalOccurrence(occurrence as OccurrenceRecord, history.runs, collapsedSlots) },
    links,
  );
  for (const { run, attempts } of history.runs) {
    await snapshotAndTrim(
      step,
      { kind: 'run', id: run.id },
      { run: finalRun(run, attempts, keepReceipts) },
      { ...links, runId: run.id },
    );
  }
  const receiptIds: string[] = [];
  for (const { run, attempts } of history.runs) {
    for (const attempt of attempts) {
      const a = attemptContext(attempt);
      for (let g = 1; g <= a.dispatchGeneration; g++) {
        await expireIfPresent(step, KINDS.outbox, outboxIdFor(attempt.id, g));
        await expireIfPresent(step, 'pending-launch', outboxIdFor(attempt.id, g));
      }
      await expireIfPresent(step, 'adoption', a.adoptionKey);
      await expireIfPresent(step, KINDS.delivery, attempt.id);
      await expireIfPresent(step, PENDING_DELIVERY_INDEX, attempt.id);
      if (keepReceipts) {
        if ((await step.tx.get(KINDS.receipt, receiptIdFor(attempt.id))) !== undefined)
          receiptIds.push(receiptIdFor(attempt.id));
      } else {
        await expireIfPresent(step, KINDS.receipt, receiptIdFor(attempt.id));
      }
      await queueOutputExpiry(step, attempt);
      await step.tx.expire(KINDS.attempt, attempt.id, attempt.version);
    }
    await expireIfPresent(step, KINDS.runHold, run.id);
    await step.tx.expire(KINDS.run, run.id, run.version);
  }
  for (let g = 1; g <= occurrenceContext(occurrence as OccurrenceRecord).fence.generation; g++)
    await expireIfPresent(step, KINDS.fenceRun, `${occurrence.id}#${g}`);
  // The occurrence record fenced its slot until now (planning.ts); its key takes over, so the slot is never
  // planned twice. Manual occurrences and stores written before already hold theirs.
  const key = occurrence.data.attributes.occurrenceKey;
  if ((await step.tx.get(KINDS.occurrenceKey, key)) === undefined)
    await step.tx.put(KINDS.occurrenceKey, key, { occurrenceId: occurrence.id }, { expectedVersion: null });
  await step.tx.expire(KINDS.occurrence, occurrence.id, occurrence.version);
  return receiptIds;
}

/**
 * What a snapshot keeps of a compacted occurrence: identity, slot, pinned revision and how it ended — the
 * state a consumer folds to, not the full object (every byte of it stays for good: 24k occurrences a day).
 */
function finalOccurrence(
  occurrence: OccurrenceRecord,
  runs: Array<{ run: RunRecord }>,
  collapsedSlots: string[],
): Record<string, unknown> {
  const a = occurrence.data.attributes;
  return {
    occurrenceId: occurrence.id,
    automationId: a.automationId,
    automationRevision: a.automationRevision,
    scheduledFor: a.scheduledFor,
    state: stateOf(occurrence),
    stateReason: a.stateReason,
    fenceGeneration: occurrenceContext(occurrence).fence.generation,
    runIds: runs.map(({ run }) => run.id),
    settledAt: a.updatedAt,
    ...(collapsedSlots.length === 0 ? {} : { collapsedSlots }),
  };
}

function finalRun(run: RunRecord, attempts: AttemptRecord[], receiptsKept: boolean): Record<string, unknown> {
  const a = run.data.attributes;
  return {
    runId: run.id,
    state: stateOf(run),
    ...(a.terminalDisposition === undefined ? {} : { outcome: a.terminalDisposition.outcome }),
    attempts: attempts.map((attempt) => ({
      attemptId: attempt.id,
      attemptNumber: attemptContext(attempt).attemptNumber,
      state: stateOf(attempt),
    })),
    ...(a.receiptRef === undefined ? {} : { receiptRef: a.receiptRef, receiptRetained: receiptsKept }),
    ...(a.finishedAt === undefined ? {} : { finishedAt: a.finishedAt }),
  };
}

/** The occurrence's runs and attempts, or undefined when any of them is not settled for good. */
type History = { runs: Array<{ run: RunRecord; attempts: AttemptRecord[] }> };

async function settledHistory(step: StepContext, occurrence: OccurrenceRecord): Promise<History | undefined> {
  if (!occurrence.terminal) return undefined;
  const runIds = new Set([
    runIdFor(occurrence.id),
    ...(occurrence.data.attributes.activeRunRef === undefined ? [] : [occurrence.data.attributes.activeRunRef]),
  ]);
  const runs: Array<{ run: RunRecord; attempts: AttemptRecord[] }> = [];
  for (const runId of runIds) {
    const run = (await step.tx.get(KINDS.run, runId)) as RunRecord | undefined;
    if (run === undefined) continue;
    if (!run.terminal) return undefined;
    const attempts: AttemptRecord[] = [];
    for (const attemptId of run.data.attributes.attemptIds) {
      const attempt = (await step.tx.get(KINDS.attempt, attemptId)) as AttemptRecord | undefined;
      if (attempt === undefined) continue;
      if (!attempt.terminal && !ATTEMPT_TERMINAL_STATES.has(stateOf(attempt))) return undefined;
      attempts.push(attempt);
    }
    runs.push({ run, attempts });
  }
  return { runs };
}

async function expireIfPresent(step: StepContext, kind: string, id: string): Promise<void> {
  const record = await step.tx.get(kind, id);
  if (record !== undefined) await step.tx.expire(kind, id, record.version);
}

/**
 * Appends a `feed.snapshot` (reason `retention_compaction`) holding the entity's final state, then drops
 * every earlier event of the stream: the contract lets retention compact only behind a snapshot.
 */
async function snapshotAndTrim(
  step: StepContext,
  stream: StreamRef,
  state: Record<string, unknown>,
  links: { automationId: string; occurrenceId: string; runId?: string },
): Promise<void> {
  const key = storeStream(stream);
  const through = await step.tx.head(key);
  if (through === 0) return;
  const dropped = await step.tx.readLog(key);
  await appendEvent(step.tx, step.feed, {
    stream,
    kind: 'feed.snapshot',
    summary: `${stream.kind} ${stream.id} compacted by retention through sequence ${through}`,
    payload: { throughSequence: through, state, reason: 'retention_compaction' },
    ...links,
  });
  await step.tx.trimLog(key, through);
  const lastDropped = dropped.at(-1);
  if (lastDropped !== undefined) await advanceFeedHorizon(step.tx, lastDropped.position);
}
