import {
  attemptGuards,
  createAttemptContext,
  type AttemptContext,
  type AttemptEvent,
} from '../../src/guards/attempt.js';
import type { TerminalEvidence } from '../../src/guards/common.js';
import { describeGuards } from './guard-cases.js';

type Args = { context: AttemptContext; event: AttemptEvent };
const now = '2026-03-01T09:10:00.000Z';
const adopted = createAttemptContext({
  attemptId: 'attempt-run-1-1',
  runId: 'run-1',
  occurrenceId: 'occ-1',
  attemptNumber: 1,
  adoptionKey: 'automation:run-1:1',
  fenceGeneration: 2,
  leaseExpiresAt: '2026-03-01T10:00:00.000Z',
  deadlineAt: '2026-03-01T09:30:00.000Z',
});
const dispatching: AttemptContext = { ...adopted, dispatchGeneration: 1 };
const started: AttemptContext = { ...dispatching, sessionId: 'session-1' };
const dispatcher = { actor: 'dispatcher' as const, now };
const worker = { actor: 'worker' as const, now };
const evidence = (over: Partial<TerminalEvidence> = {}): TerminalEvidence => ({
  sessionId: 'session-1',
  outcome: 'succeeded',
  exitCode: 0,
  verified: true,
  ...over,
});
const settle = (context: AttemptContext, e: TerminalEvidence): Args => ({
  context,
  event: { ...worker, type: 'run_settled', evidence: e },
});
const completionCases = (context: AttemptContext) => ({
  pass: settle(context, evidence()),
  fail: {
    'the evidence is unverified': settle(context, evidence({ verified: false })),
    'the exit code is non-zero': settle(context, evidence({ exitCode: 3 })),
    'the evidence is from another session': settle(context, evidence({ sessionId: 'session-2' })),
    'the evidence reports failure': settle(context, evidence({ outcome: 'failed' })),
  },
});
const failureCases = (context: AttemptContext) => ({
  pass: settle(context, evidence({ outcome: 'failed', exitCode: 1 })),
  fail: {
    'the evidence is unverified': settle(context, evidence({ outcome: 'failed', verified: false })),
    'the evidence reports success': settle(context, evidence()),
    'the evidence is from another session': settle(context, evidence({ outcome: 'failed', sessionId: 'session-2' })),
  },
});
const lost = (
  context: AttemptContext,
  over: Partial<{ sessionId: string; terminalEvidenceSeen: boolean; evidenceExpiresAt: string }> = {},
): Args => ({
  context,
  event: {
    actor: 'scheduler',
    now,
    type: 'evidence_lost',
    sessionId: 'session-1',
    terminalEvidenceSeen: false,
    evidenceExpiresAt: '2026-03-01T09:05:00.000Z',
    ...over,
  },
});
const cancel = (
  context: AttemptContext,
  cancellation: { requestedAt: string; acknowledgedAt?: string; reconciledAt?: string },
): Args => ({
  context,
  event: { actor: 'command_handler', now, type: 'cancel_acknowledged', cancellation },
});

describeGuards<Args>('attempt.v1 guards', attemptGuards, {
  singleDispatchInFlight: {
    pass: { context: adopted, event: { ...dispatcher, type: 'dispatch', dispatchGeneration: 1, fenceGeneration: 2 } },
    fail: {
      'the dispatch generation skips': {
        context: adopted,
        event: { ...dispatcher, type: 'dispatch', dispatchGeneration: 2, fenceGeneration: 2 },
      },
      'the fence generation is stale': {
        context: adopted,
        event: { ...dispatcher, type: 'dispatch', dispatchGeneration: 1, fenceGeneration: 1 },
      },
    },
  },
  cancelCommittedBeforeDispatch: {
    pass: cancel(adopted, { requestedAt: now }),
    fail: {
      'a dispatch already happened': cancel(dispatching, { requestedAt: now }),
      'no request is recorded': cancel(adopted, { requestedAt: '' }),
    },
  },
  sessionBound: {
    pass: {
      context: dispatching,
      event: { ...dispatcher, type: 'runtime_started', sessionId: 'session-1', dispatchGeneration: 1 },
    },
    fail: {
      'a session is already bound': {
        context: started,
        event: { ...dispatcher, type: 'runtime_started', sessionId: 'session-2', dispatchGeneration: 1 },
      },
      'the session id is empty': {
        context: dispatching,
        event: { ...dispatcher, type: 'runtime_started', sessionId: '', dispatchGeneration: 1 },
      },
      'it answers a stale dispatch': {
        context: dispatching,
        event: { ...dispatcher, type: 'runtime_started', sessionId: 'session-1', dispatchGeneration: 0 },
      },
    },
  },
  deterministicRefusal: {
    pass: {
      context: dispatching,
      event: {
        ...dispatcher,
        type: 'launch_refused',
        failure: { failureClass: 'runtime_unavailable', preOwnership: true },
      },
    },
    fail: {
      'ownership may have been taken': {
        context: dispatching,
        event: {
          ...dispatcher,
          type: 'launch_refused',
          failure: { failureClass: 'launch_refused', preOwnership: false },
        },
      },
    },
  },
  dispatchUnacknowledgedAtLeaseExpiry: {
    pass: {
      context: dispatching,
      event: { ...dispatcher, now: '2026-03-01T10:00:01.000Z', type: 'dispatch_unconfirmed', acknowledged: false },
    },
    fail: {
      'the lease is still live': {
        context: dispatching,
        event: { ...dispatcher, type: 'dispatch_unconfirmed', acknowledged: false },
      },
      'the runtime acknowledged': {
        context: dispatching,
        event: { ...dispatcher, now: '2026-03-01T10:00:01.000Z', type: 'dispatch_unconfirmed', acknowledged: true },
      },
    },
  },
  cancelAcknowledgedBeforeStart: {
    pass: cancel(dispatching, { requestedAt: now, acknowledgedAt: now }),
    fail: {
      'nothing acknowledged it': cancel(dispatching, { requestedAt: now }),
      'a session is already bound': cancel(started, { requestedAt: now, acknowledgedAt: now }),
    },
  },
  outputCursorsEstablished: {
    pass: {
      context: started,
      event: { ...worker, type: 'evidence_stream_open', sessionId: 'session-1', cursors: { logCursor: 'log:0' } },
    },
    fail: {
      'no cursor is established': {
        context: started,
        event: { ...worker, type: 'evidence_stream_open', sessionId: 'session-1', cursors: {} },
      },
      'the stream is for another session': {
        context: started,
        event: { ...worker, type: 'evidence_stream_open', sessionId: 'session-2', cursors: { logCursor: 'log:0' } },
      },
    },
  },
  terminalFailureEvidence: failureCases(started),
  terminalCompletionEvidence: completionCases(started),
  verifiedCompletionEvidence: completionCases(started),
  verifiedFailureEvidence: failureCases(started),
  sessionVanishedBeforeEvidence: {
    pass: lost(started),
    fail: {
      'terminal evidence was seen': lost(started, { terminalEvidenceSeen: true }),
      'another session vanished': lost(started, { sessionId: 'session-9' }),
    },
  },
  perRunMinutesElapsed: {
    pass: { context: started, event: { actor: 'scheduler', now: '2026-03-01T09:30:00.000Z', type: 'timeout' } },
    fail: { 'the deadline is ahead': { context: started, event: { actor: 'scheduler', now, type: 'timeout' } } },
  },
  cancelAcknowledgedByRuntime: {
    pass: cancel(started, { requestedAt: now, acknowledgedAt: now }),
    fail: {
      'the runtime has not acknowledged': cancel(started, { requestedAt: now, reconciledAt: now }),
      'no session exists': cancel(dispatching, { requestedAt: now, acknowledgedAt: now }),
    },
  },
  heartbeatEvidenceExpired: {
    pass: lost(started),
    fail: {
      'heartbeat evidence is still fresh': lost(started, { evidenceExpiresAt: '2026-03-01T09:20:00.000Z' }),
      'terminal evidence was seen': lost(started, { terminalEvidenceSeen: true }),
    },
  },
});
