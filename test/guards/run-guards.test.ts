import { createRunContext, runGuards, type RunContext, type RunEvent } from '../../src/guards/run.js';
import { describeGuards } from './guard-cases.js';

type Args = { context: RunContext; event: RunEvent };
const now = '2026-03-01T09:10:00.000Z';
const afterDeadline = '2026-03-01T10:00:00.000Z';
const context: RunContext = {
  ...createRunContext({
    runId: 'run-1',
    occurrenceId: 'occ-1',
    automationId: 'a',
    automationRevision: 2,
    fenceGeneration: 1,
    deadlineAt: '2026-03-01T09:30:00.000Z',
  }),
  attemptCount: 1,
  currentAttemptId: 'attempt-1',
};
const base = { actor: 'dispatcher' as const, now };
const started = (adoptionCommittedAt: string | null, launchIssuedAt: string, attemptId = 'attempt-1'): Args => ({
  context,
  event: { ...base, type: 'attempt_started', attemptId, attemptNumber: 1, adoptionCommittedAt, launchIssuedAt },
});
const settled = (
  state: 'succeeded' | 'failed' | 'ambiguous',
  extra: Partial<{
    receiptRef: string;
    furtherAttemptOpens: boolean;
    now: string;
    attemptId: string;
    ctx: RunContext;
  }> = {},
): Args => ({
  context: extra.ctx ?? context,
  event: {
    ...base,
    now: extra.now ?? now,
    type: 'attempt_settled',
    attempt: { attemptId: extra.attemptId ?? 'attempt-1', attemptNumber: 1, state },
    furtherAttemptOpens: extra.furtherAttemptOpens ?? false,
    ...(extra.receiptRef === undefined ? {} : { receiptRef: extra.receiptRef }),
  },
});
const refused = (attempts: Array<{ state: string; failureClass: string | null; evidenceRecorded: boolean }>): Args => ({
  context,
  event: { ...base, type: 'launch_refused', attempts: attempts.map((a, i) => ({ ...a, attemptNumber: i + 1 })) },
});
const unheld: RunContext = { ...context, operatorHold: false };

describeGuards<Args>('run.v1 guards', runGuards, {
  adoptionCommittedBeforeSideEffect: {
    pass: started('2026-03-01T09:00:00.000Z', '2026-03-01T09:00:01.000Z'),
    fail: {
      'no adoption was committed': started(null, '2026-03-01T09:00:01.000Z'),
      'the launch preceded the adoption': started('2026-03-01T09:00:02.000Z', '2026-03-01T09:00:01.000Z'),
      'no attempt id is set': started('2026-03-01T09:00:00.000Z', '2026-03-01T09:00:01.000Z', ''),
    },
  },
  everyAttemptRefused: {
    pass: refused([{ state: 'failed', failureClass: 'launch_refused', evidenceRecorded: false }]),
    fail: {
      'there are no attempts': refused([]),
      'an attempt failed after ownership': refused([
        { state: 'failed', failureClass: 'runtime_error', evidenceRecorded: false },
      ]),
      'an attempt is still open': refused([{ state: 'dispatching', failureClass: null, evidenceRecorded: false }]),
      'an attempt produced evidence': refused([
        { state: 'failed', failureClass: 'launch_refused', evidenceRecorded: true },
      ]),
    },
  },
  attemptSucceededWithReceipt: {
    pass: settled('succeeded', { receiptRef: 'receipt-1' }),
    fail: {
      'no receipt is recorded': settled('succeeded'),
      'the attempt failed': settled('failed', { receiptRef: 'receipt-1' }),
      'it is an older attempt than the latest': settled('succeeded', {
        receiptRef: 'receipt-1',
        ctx: { ...context, attemptCount: 2 },
      }),
    },
  },
  attemptFailedWithoutFurtherAttempt: {
    pass: settled('failed', { ctx: unheld }),
    fail: {
      'retry opens another attempt': settled('failed', { ctx: unheld, furtherAttemptOpens: true }),
      'an operator hold window is open': settled('failed'),
      'the attempt is older than the latest': settled('failed', { ctx: { ...unheld, attemptCount: 2 } }),
      'the attempt succeeded': settled('succeeded', { ctx: unheld }),
    },
  },
  currentAttemptAmbiguous: {
    pass: {
      context,
      event: {
        ...base,
        type: 'attempt_ambiguous',
        attempt: { attemptId: 'attempt-1', attemptNumber: 1, state: 'ambiguous' },
        operatorRecoveryResolved: false,
      },
    },
    fail: {
      'an operator recovery resolved it': {
        context,
        event: {
          ...base,
          type: 'attempt_ambiguous',
          attempt: { attemptId: 'attempt-1', attemptNumber: 1, state: 'ambiguous' },
          operatorRecoveryResolved: true,
        },
      },
      'it is an older attempt than the latest': {
        context: { ...context, attemptCount: 3 },
        event: {
          ...base,
          type: 'attempt_ambiguous',
          attempt: { attemptId: 'attempt-1', attemptNumber: 1, state: 'ambiguous' },
          operatorRecoveryResolved: false,
        },
      },
    },
  },
});

// A held run's failure settles once the original deadline has passed.
describeGuards<Args>(
  'run.v1 held deadline',
  { attemptFailedWithoutFurtherAttempt: runGuards.attemptFailedWithoutFurtherAttempt },
  {
    attemptFailedWithoutFurtherAttempt: {
      pass: settled('failed', { now: afterDeadline }),
      fail: { 'the deadline is still open': settled('failed', { now }) },
    },
  },
);
