import { QuarantineState } from '../../machines/extension-states.js';
import { readQuarantine } from '../domain/quarantine.js';
import { isRunHeld } from '../domain/run-hold.js';
import { DefinitionState, OccurrenceState, RunState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import {
  KINDS,
  occurrenceContext,
  renderAttempt,
  renderOccurrence,
  renderRun,
  runContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { StoreReader } from '../store/store.js';
import { DEFINITION_KIND, type DefinitionRecord } from '../domain/definition-records.js';
import { attemptFailureView, runFailureFields } from './failure-view.js';
import { liveOccurrencesOf, newestOccurrences, newestRunsIn, recentRuns } from './automation-history.js';
import { timelinePage } from './timeline-page.js';

/** Newest occurrences (by slot) and successful runs (by start) health reads: the latest of each is among them. */
const NEWEST_READ = 20;

function decodeCursor(cursor: string | undefined): { startedAt: string; runId: string } | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      startedAt?: unknown;
      runId?: unknown;
    };
    if (typeof value.startedAt === 'string' && typeof value.runId === 'string')
      return { startedAt: value.startedAt, runId: value.runId };
  } catch {
    // the typed error below
  }
  throw new ContractError('VALIDATION_FAILED', 'cursor is not one this engine issued', { field: 'payload.cursor' });
}

/**
 * One page of the automation's runs (of one occurrence when named), newest first, strictly after the cursor
 * position: read from the store's timeline of the automation's runs, never the runs whole.
 */
async function runsAfterCursor(
  reader: StoreReader,
  payload: { automationId: string; occurrenceId?: string },
  after: { startedAt: string; runId: string } | undefined,
  limit: number,
): Promise<{ page: RunRecord[]; next?: { at: string; id: string } }> {
  const records = new Map<string, RunRecord>();
  const found = await timelinePage(
    reader,
    'run',
    {
      automationIds: [payload.automationId],
      limit,
      ...(after === undefined ? {} : { before: { at: after.startedAt, id: after.runId } }),
    },
    async (entry) => {
      const run = (await reader.get<RunRecord['data']>(KINDS.run, entry.id)) as RunRecord | undefined;
      if (run === undefined) return false;
      records.set(entry.id, run);
      return payload.occurrenceId === undefined || runContext(run).occurrenceId === payload.occurrenceId;
    },
  );
  const page = found.entries.map((e) => records.get(e.id)!);
  return found.next === undefined ? { page } : { page, next: found.next };
}

/** Each run rendered with the attempts the store still holds for it, and its failure and hold when it has them. */
async function renderRunsWithAttempts(reader: StoreReader, page: RunRecord[]): Promise<Array<Record<string, unknown>>> {
  const rendered = [];
  for (const run of page) {
    const records: AttemptRecord[] = [];
    for (const attemptId of run.data.attributes.attemptIds) {
      const attempt = await reader.get<AttemptRecord['data']>(KINDS.attempt, attemptId);
      if (attempt !== undefined) records.push(attempt as AttemptRecord);
    }
    const attempts = records.map((a) => {
      const failure = attemptFailureView(a);
      return { ...renderAttempt(a), ...(failure === undefined ? {} : { failure }) };
    });
    rendered.push({ ...renderRun(run), ...(await runFailureFields(reader, run, records)), attempts });
  }
  return rendered;
}

/** run.history.v1: runs of an automation newest first (by start, then id), each with its attempts. */
export async function runHistory(
  reader: StoreReader,
  payload: { automationId: string; occurrenceId?: string; limit?: number; cursor?: string },
): Promise<Record<string, unknown>> {
  const definition = await reader.get(DEFINITION_KIND, payload.automationId);
  if (definition === undefined)
    throw new ContractError('NOT_FOUND', `no definition with id ${payload.automationId}`, {
      automationId: payload.automationId,
    });
  const limit = payload.limit ?? 20;
  const { page, next } = await runsAfterCursor(reader, payload, decodeCursor(payload.cursor), limit);
  const rendered = await renderRunsWithAttempts(reader, page);
  const hasMore = next !== undefined;
  return {
    automationId: payload.automationId,
    ...(payload.occurrenceId === undefined ? {} : { occurrenceId: payload.occurrenceId }),
    runs: rendered,
    cursor: {
      hasMore,
      ...(payload.cursor === undefined ? {} : { current: payload.cursor }),
      ...(next === undefined
        ? {}
        : { next: Buffer.from(JSON.stringify({ startedAt: next.at, runId: next.id })).toString('base64url') }),
    },
  };
}

/** The definition whose health is asked for: NOT_FOUND when absent, GONE_TOMBSTONED when tombstoned. */
async function readHealthDefinition(reader: StoreReader, automationId: string): Promise<DefinitionRecord> {
  const record = (await reader.get<DefinitionRecord['data']>(DEFINITION_KIND, automationId)) as
    DefinitionRecord | undefined;
  if (record === undefined)
    throw new ContractError('NOT_FOUND', `no definition with id ${automationId}`, {
      automationId,
    });
  if (stateOf(record) === DefinitionState.tombstoned)
    throw new ContractError('GONE_TOMBSTONED', `definition ${automationId} is tombstoned`, {
      automationId,
    });
  return record;
}

/** The latest of some timestamps, or null when there is none. */
const latestOf = (values: Array<string | undefined>): string | null =>
  values
    .filter((v): v is string => v !== undefined)
    .sort()
    .at(-1) ?? null;

/** Settled runs since the last success, newest first; a cancelled run is not a failure. */
export function consecutiveFailuresOf(runs: RunRecord[]): number {
  const settled = runs
    .filter((r) => r.data.attributes.finishedAt !== undefined)
    .sort((a, b) => (a.data.attributes.finishedAt! < b.data.attributes.finishedAt! ? 1 : -1));
  let consecutiveFailures = 0;
  for (const run of settled) {
    if (stateOf(run) === RunState.succeeded) break;
    if (stateOf(run) !== RunState.cancelled) consecutiveFailures += 1;
  }
  return consecutiveFailures;
}

/** Why the automation is not making progress on its own, the most pressing reason first; null when it is. */
export async function staleReasonOf(
  reader: StoreReader,
  state: string,
  quarantine: { quarantined: boolean; reason: string | null },
  live: OccurrenceRecord[],
): Promise<string | null> {
  let anyHeld = false;
  for (const o of live) if (!anyHeld) anyHeld = await isRunHeld(reader, o);
  return quarantine.quarantined
    ? `quarantined: ${quarantine.reason}`
    : live.some((o) => stateOf(o) === OccurrenceState.recovery_required)
      ? 'an occurrence waits for operator recovery'
      : anyHeld
        ? 'a run is held for an operator retry'
        : state !== DefinitionState.active
          ? `definition is ${state}`
          : null;
}

/** definition.health.v1: where an automation stands and what it will do next. */
export async function definitionHealth(
  svc: EngineServices,
  reader: StoreReader,
  payload: { automationId: string },
): Promise<Record<string, unknown>> {
  const record = await readHealthDefinition(reader, payload.automationId);
  const state = stateOf(record);
  const definition = record.data.attributes.definition;
  // Each from an index: the newest occurrences and runs, the live occurrences, the runs back to the latest success.
  const occurrences = await newestOccurrences(reader, payload.automationId, NEWEST_READ);
  const runs = await recentRuns(reader, payload.automationId);
  const succeeded = await newestRunsIn(reader, payload.automationId, [RunState.succeeded], NEWEST_READ);
  const quarantine = await readQuarantine(reader, payload.automationId);
  const quarantined = quarantine.state === QuarantineState.quarantined;
  const live = await liveOccurrencesOf(reader, payload.automationId);
  const leased = live.map((o) => occurrenceContext(o)).find((c) => c.fence.claimedBy !== null);
  const schedule = svc.schedule(definition);
  const nextDueAt =
    state === DefinitionState.active && !quarantined
      ? (schedule.nextAfter(svc.clock.now())?.toISOString() ?? null)
      : null;
  const staleReason = await staleReasonOf(reader, state, { quarantined, reason: quarantine.reason }, live);
  const indexed = await reader.liveWork(KINDS.occurrence);
  return {
    health: {
      automationId: payload.automationId,
      lifecycleState: state,
      revision: definition.revision,
      nextDueAt,
      lastPlannedAt: latestOf(occurrences.map((o) => o.data.attributes.createdAt)),
      lastStartedAt: latestOf(runs.map((r) => r.data.attributes.startedAt)),
      lastSuccessAt: latestOf(succeeded.map((r) => r.data.attributes.finishedAt)),
      consecutiveFailures: consecutiveFailuresOf(runs),
      leaseOwner: leased?.fence.claimedBy ?? null,
      leaseExpiresAt: leased?.fence.leaseExpiresAt ?? null,
      quarantined,
      staleReason,
      liveOccurrences: live.map((o) => renderOccurrence(o)),
      engineLiveOccurrences: indexed.length,
    },
  };
}
