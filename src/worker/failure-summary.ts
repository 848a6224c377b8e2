import { boundedMessage, OUTPUT_TAIL_BYTES, type AttemptFailure } from '../domain/attempt-failure.js';
import type { Observation, Runtime } from '../runtime/runtime.js';

type Exit = Extract<Observation, { status: 'exited' }>;

/**
 * The end of what the session printed, when its runtime keeps its output. A runtime that cannot answer (its
 * evidence unreadable just now) leaves the tail out: settling never waits on, or fails for, a tail.
 */
async function outputTail(runtime: Runtime | undefined, sessionId: string): Promise<Partial<AttemptFailure>> {
  if (runtime?.sessionLog === undefined) return {};
  try {
    const log = await runtime.sessionLog(sessionId, { offset: -OUTPUT_TAIL_BYTES, limit: OUTPUT_TAIL_BYTES });
    if (log === undefined || log.size === 0) return {};
    return { outputTail: log.text, ...(log.offset > 0 ? { outputTruncated: true } : {}) };
  } catch {
    return {};
  }
}

/**
 * What an attempt that settles failed keeps of its exit: the class (`runtime_error` for a session that ran and
 * failed), the exit code and signal, the error message (an in-process function's thrown error, carried as the
 * exit's `detail`; else why delivery failed), and a bounded tail of its output.
 */
export async function failureOfExit(
  runtime: Runtime | undefined,
  sessionId: string,
  observation: Exit,
  undelivered: string | undefined,
): Promise<AttemptFailure> {
  const message = undelivered ?? observation.detail;
  return {
    failureClass: 'runtime_error',
    exitCode: observation.exitCode,
    ...(observation.signal === undefined ? {} : { signal: observation.signal }),
    ...(message === undefined || message === '' ? {} : { errorMessage: boundedMessage(message) }),
    ...(await outputTail(runtime, sessionId)),
  };
}
