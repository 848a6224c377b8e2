import type { LaunchRequest } from '../../src/runtime/runtime.js';

/**
 * Launch requests for runtime tests: each call names a new attempt, and its session key is `key(n)` of its
 * running number (so each file can keep keys apart from another file's on a shared sessions folder).
 */
export function launchRequests(key: (n: number) => string): (over?: Partial<LaunchRequest>) => LaunchRequest {
  let n = 0;
  return (over = {}) => {
    n += 1;
    return {
      sessionKey: key(n),
      automationId: 'daily',
      occurrenceId: 'daily-1',
      runId: 'run-daily-1',
      attemptId: `attempt-${n}`,
      attemptNumber: 1,
      prompt: 'say hello',
      deadlineAt: '2026-03-02T09:30:00.000Z',
      ...over,
    };
  };
}
