import { redactText } from '../contract/redaction.js';
import { ContractError } from '../contract/errors.js';
import { isAttemptTerminal } from '../../machines/index.js';
import {
  attemptContext,
  KINDS,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import { MAX_LOG_WINDOW } from '../runtime/session-log.js';
import type { StoreReader } from '../store/store.js';
import { runsOf } from './occurrence-reads.js';
import { missingEntity } from './operator-lookups.js';

/** What `x-coven-automata.run.output.v1` names: a run or an occurrence, and optionally which attempt and bytes. */
export interface OutputRequest {
  runId?: string;
  occurrenceId?: string;
  attemptNumber?: number;
  offset?: number;
  limit?: number;
}

/** The default window: the last 64 KiB, where a failure's cause usually is. */
const DEFAULT_WINDOW = 64 * 1024;

interface Located {
  run: RunRecord;
  attempt: AttemptRecord | undefined;
}

/** NOT_FOUND for a run or occurrence the store lacks; one retention compacted took its output with it. */
async function missingOutput(reader: StoreReader, kind: 'run' | 'occurrence', id: string): Promise<ContractError> {
  const missing = await missingEntity(reader, kind, id);
  const compactedAt = missing.details?.compactedAt;
  if (typeof compactedAt !== 'string') return missing;
  return new ContractError(
    'NOT_FOUND',
    `the output of ${kind} ${id} expired by retention: it settled long ago and was compacted at ${compactedAt}`,
    { ...missing.details, outputExpired: true },
  );
}

async function runOf(reader: StoreReader, request: OutputRequest): Promise<RunRecord> {
  if (request.runId !== undefined) {
    const run = await reader.get<RunRecord['data']>(KINDS.run, request.runId);
    if (run === undefined) throw await missingOutput(reader, 'run', request.runId);
    return run as RunRecord;
  }
  const occurrence = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, request.occurrenceId!);
  if (occurrence === undefined) throw await missingOutput(reader, 'occurrence', request.occurrenceId!);
  const latest = (await runsOf(reader, occurrence as OccurrenceRecord)).at(-1);
  if (latest === undefined)
    throw new ContractError('NOT_FOUND', `occurrence ${request.occurrenceId!} has no run yet: nothing printed`, {
      occurrenceId: request.occurrenceId,
    });
  return latest;
}

/** The run and the attempt whose output is asked for (its latest attempt unless one is named). */
async function locate(reader: StoreReader, request: OutputRequest): Promise<Located> {
  const run = await runOf(reader, request);
  const attempts: AttemptRecord[] = [];
  for (const id of run.data.attributes.attemptIds) {
    const attempt = await reader.get<AttemptRecord['data']>(KINDS.attempt, id);
    if (attempt !== undefined) attempts.push(attempt as AttemptRecord);
  }
  if (request.attemptNumber === undefined) return { run, attempt: attempts.at(-1) };
  const named = attempts.find((a) => attemptContext(a).attemptNumber === request.attemptNumber);
  if (named === undefined)
    throw new ContractError('NOT_FOUND', `run ${run.id} has no attempt ${request.attemptNumber}`, {
      runId: run.id,
      attemptNumber: request.attemptNumber,
    });
  return { run, attempt: named };
}

/**
 * x-coven-automata.run.output.v1: a window of what one attempt's session printed (stdout and stderr as one
 * stream), read from its runtime's evidence while the attempt's records exist — retention expires the records and
 * then the output itself (NOT_FOUND, `outputExpired`). At most 1 MiB a window (default: the last 64 KiB);
 * `nextOffset` continues it. The text passes the published-view redaction (credentials, absolute paths); the
 * daemon's tokenless reads withhold it whole.
 *
 * @example
 * ```ts
 * const page = await engine.commands.handle({ ...envelope, command: 'x-coven-automata.run.output.v1',
 *   payload: { occurrenceId, offset: 0 } });
 * if (page.outcome === 'committed') process.stdout.write(String(page.result?.output));
 * ```
 */
export async function runOutput(svc: EngineServices, request: OutputRequest): Promise<Record<string, unknown>> {
  const { run, attempt } = await svc.store.read((r) => locate(r, request));
  const base = {
    runId: run.id,
    occurrenceId: (run.data.snapshot.context as { occurrenceId: string }).occurrenceId,
    automationId: run.data.attributes.automationId,
  };
  const sessionId = attempt === undefined ? null : attemptContext(attempt).sessionId;
  const settled = attempt !== undefined && isAttemptTerminal(stateOf(attempt));
  const window = {
    offset: request.offset ?? -DEFAULT_WINDOW,
    limit: Math.min(request.limit ?? MAX_LOG_WINDOW, MAX_LOG_WINDOW),
  };
  const runtime = attempt === undefined ? undefined : svc.runtime(attempt.data.attributes.runtimeId);
  const log =
    sessionId === null || runtime?.sessionLog === undefined ? undefined : await runtime.sessionLog(sessionId, window);
  return {
    ...base,
    attemptId: attempt?.id ?? null,
    attemptNumber: attempt === undefined ? null : attemptContext(attempt).attemptNumber,
    attemptState: attempt === undefined ? null : stateOf(attempt),
    sessionId,
    available: log !== undefined,
    output: log === undefined ? '' : redactText(log.text),
    offset: log?.offset ?? 0,
    nextOffset: log?.nextOffset ?? 0,
    size: log?.size ?? 0,
    // Nothing more will come: the session ended, or the attempt settled without output this runtime can read.
    complete: log?.complete ?? settled,
  };
}
