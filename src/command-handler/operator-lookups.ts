import { compactedEntity } from '../changefeed/compacted-stream.js';
import { ContractError } from '../contract/errors.js';
import { MAX_ATTEMPTS_PER_RUN } from '../contract/vocabulary.js';
import type { StepContext } from '../domain/lifecycle.js';
import { KINDS, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import type { OccurrenceContext } from '../guards/occurrence.js';
import type { StoreReader } from '../store/store.js';
import type { CommandContext } from './context.js';

/** The step context an operator command's transitions commit under: its transaction, feed, time and adoption key. */
export const commandStep = (ctx: CommandContext): StepContext => ({
  tx: ctx.tx,
  feed: ctx.feed,
  now: ctx.now,
  adoptionKey: ctx.envelope.adoptionKey,
  ...(ctx.committed === undefined ? {} : { committed: ctx.committed }),
});

/** NOT_FOUND for an entity the command names that the store does not hold. */
export const notFound = (kind: string, id: string): ContractError =>
  new ContractError('NOT_FOUND', `no ${kind} with id ${id}`, { kind, id });

/** NOT_FOUND for an occurrence or run, saying so when retention compacted it (it settled long ago). */
export async function missingEntity(
  reader: StoreReader,
  kind: 'occurrence' | 'run',
  id: string,
): Promise<ContractError> {
  const compacted = await compactedEntity(reader, { kind, id });
  if (compacted === undefined) return notFound(kind, id);
  const state = (compacted.finalState[kind] as { state?: string } | undefined)?.state ?? 'settled';
  return new ContractError(
    'NOT_FOUND',
    `${kind} ${id} settled (${state}) and was compacted by retention at ${compacted.compactedAt}; ` +
      'its stream keeps the final state',
    {
      kind,
      id,
      compactedAt: compacted.compactedAt,
      finalState: compacted.finalState,
    },
  );
}

/** The occurrence a command names, or NOT_FOUND (noting a retention compaction). */
export async function getOccurrence(ctx: CommandContext, id: string): Promise<OccurrenceRecord> {
  const r = await ctx.tx.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
  if (r === undefined) throw await missingEntity(ctx.tx, 'occurrence', id);
  return r as OccurrenceRecord;
}

/** The run a command names, or NOT_FOUND (noting a retention compaction). */
export async function getRun(ctx: CommandContext, id: string): Promise<RunRecord> {
  const r = await ctx.tx.get<RunRecord['data']>(KINDS.run, id);
  if (r === undefined) throw await missingEntity(ctx.tx, 'run', id);
  return r as RunRecord;
}

/**
 * DEADLINE_EXCEEDED unless the occurrence's deadline is still ahead: no new attempt opens past it.
 * Returns the deadline.
 */
export function requireBeforeDeadline(runId: string, occurrence: OccurrenceContext, now: string): string {
  if (occurrence.deadlineAt === null || Date.parse(occurrence.deadlineAt) <= Date.parse(now)) {
    throw new ContractError('DEADLINE_EXCEEDED', `run ${runId} passed its deadline ${String(occurrence.deadlineAt)}`, {
      runId,
      deadlineAt: occurrence.deadlineAt,
    });
  }
  return occurrence.deadlineAt;
}

/** ILLEGAL_TRANSITION once a run has used its attempt budget. */
export function requireAttemptBudget(runId: string, latestAttemptNumber: number): void {
  if (latestAttemptNumber >= MAX_ATTEMPTS_PER_RUN)
    throw new ContractError('ILLEGAL_TRANSITION', `run ${runId} already has ${MAX_ATTEMPTS_PER_RUN} attempts`, {
      runId,
    });
}
