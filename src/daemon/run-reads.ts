import { guardRead } from '../command-handler/read-access.js';
import { OPERATOR_CALLER, type ReadCaller } from '../domain/read-acl.js';
import type { StoreReader } from '../store/store.js';

/** What an operator retry of a run names: its latest attempt's number and where that attempt stands. */
export interface LatestAttempt {
  runId: string;
  attemptNumber: number;
  disposition: string;
}

/**
 * The latest attempt of a run as the store records it, for `attempt.retry.v1` (the CLI's `retry`), answered
 * by the daemon at `GET /api/v1/runs/:runId/latest-attempt` when it owns the store. A run the store lacks
 * reads as attempt 1, failed: the retry command itself then refuses it with its own typed error. The attempt is
 * part of what `run.get.v1` shows, so the read ACL judges it as that read.
 */
export async function latestAttempt(
  reader: StoreReader,
  runId: string,
  caller: ReadCaller = OPERATOR_CALLER,
): Promise<LatestAttempt> {
  await guardRead(reader, 'run.get.v1', { runId }, caller);
  const run = await reader.get<{ attributes: { attemptIds: string[] } }>('run', runId);
  const attemptId = run?.data.attributes.attemptIds.at(-1);
  const attempt =
    attemptId === undefined
      ? undefined
      : await reader.get<{ snapshot: { value: string; context: { attemptNumber: number } } }>('attempt', attemptId);
  return {
    runId,
    attemptNumber: attempt?.data.snapshot.context.attemptNumber ?? 1,
    disposition: attempt?.data.snapshot.value ?? 'failed',
  };
}
