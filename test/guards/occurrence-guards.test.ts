import { occurrenceGuards } from '../../src/guards/occurrence.js';
import { describeGuards } from './guard-cases.js';
import {
  adopt,
  autoRetry,
  claimed,
  ev,
  evidence,
  heldClaim,
  later,
  now,
  planned,
  retry,
  running,
  unheld,
  type Args,
} from './occurrence-guard-fixtures.js';
import { recoveryCases } from './occurrence-recovery-cases.js';

describeGuards<Args>('occurrence.v1 guards', occurrenceGuards, {
  misfireDisposesSlot: {
    pass: { context: planned, event: ev('scheduler', { type: 'misfire', disposition: 'collapsed_to_latest' }) },
    fail: {
      'the disposition is unknown': {
        context: planned,
        event: ev('scheduler', { type: 'misfire', disposition: 'backfill' }),
      },
    },
  },
  supersededBeforeClaim: {
    pass: { context: planned, event: ev('scheduler', { type: 'definition_superseded', currentRevision: 3 }) },
    fail: {
      'the revision is the pinned one': {
        context: planned,
        event: ev('scheduler', { type: 'definition_superseded', currentRevision: 2 }),
      },
      'the slot is already claimed': {
        context: claimed,
        event: ev('scheduler', { type: 'definition_superseded', currentRevision: 3 }),
      },
    },
  },
  cancelBeforeClaim: {
    pass: {
      context: planned,
      event: ev('command_handler', { type: 'cancel_acknowledged', cancellation: { requestedAt: now } }),
    },
    fail: {
      'a claim holds the slot': {
        context: claimed,
        event: ev('command_handler', { type: 'cancel_acknowledged', cancellation: { requestedAt: now } }),
      },
    },
  },
  claimCompareAndSet: {
    pass: {
      context: planned,
      event: ev('scheduler', {
        type: 'claim',
        expectedGeneration: 0,
        claimedBy: 'scheduler-1',
        leaseExpiresAt: '2026-03-01T10:10:00.000Z',
      }),
    },
    fail: {
      'the generation moved on': {
        context: claimed,
        event: ev('scheduler', {
          type: 'claim',
          expectedGeneration: 0,
          claimedBy: 'scheduler-1',
          leaseExpiresAt: '2026-03-01T10:10:00.000Z',
        }),
      },
      'no lease is set': {
        context: planned,
        event: ev('scheduler', { type: 'claim', expectedGeneration: 0, claimedBy: 'scheduler-1', leaseExpiresAt: now }),
      },
      'no claimant is named': {
        context: planned,
        event: ev('scheduler', {
          type: 'claim',
          expectedGeneration: 0,
          claimedBy: '',
          leaseExpiresAt: '2026-03-01T10:10:00.000Z',
        }),
      },
    },
  },
  operatorRetryAllowed: {
    pass: retry(),
    fail: {
      'the run is not held': retry({ runHeld: false }),
      'the named attempt is older than the latest': retry({ priorAttemptNumber: 0 }),
      'the latest attempt is ambiguous': retry({ priorDisposition: 'ambiguous' }),
      'the latest attempt is not terminal': retry({ latestAttemptTerminal: false }),
      'the deadline passed': retry({ now: later }),
      'ten attempts exist': retry({ priorAttemptNumber: 10 }, { ...running, attemptCount: 10 }),
      'the automation is quarantined': retry({ quarantined: true }),
      'a stop is unresolved': retry({ stopUnresolved: true }),
    },
  },
  automaticRetryAllowed: {
    pass: autoRetry(),
    fail: {
      'the class is not retryable under the policy': autoRetry({
        failure: { failureClass: 'transient_dispatch', preOwnership: true },
      }),
      'the failure was a deterministic refusal': autoRetry({
        failure: { failureClass: 'launch_refused', preOwnership: true },
      }),
      'ownership may have been taken': autoRetry({
        failure: { failureClass: 'runtime_unavailable', preOwnership: false },
      }),
      'the prior disposition was ambiguous': autoRetry({ priorDisposition: 'ambiguous' }),
      'the occurrence saw ambiguous work': autoRetry({}, { ...heldClaim, ambiguousDisposition: true }),
      'the policy is exhausted': autoRetry({ priorAttemptNumber: 3 }, { ...heldClaim, attemptCount: 3 }),
      'the named attempt is older than the latest': autoRetry({ priorAttemptNumber: 0 }),
      'the backoff ends after the deadline': autoRetry({ notBefore: '2026-03-01T10:00:01.000Z' }),
      'the backoff is in the past': autoRetry({ notBefore: '2026-03-01T09:00:00.000Z' }),
    },
  },
  preOwnershipFailureFinal: {
    pass: {
      context: unheld(heldClaim),
      event: ev('dispatcher', { type: 'run_settled', failure: { failureClass: 'launch_refused', preOwnership: true } }),
    },
    fail: {
      'an automatic retry is possible': {
        context: unheld(heldClaim),
        event: ev('dispatcher', {
          type: 'run_settled',
          failure: { failureClass: 'runtime_unavailable', preOwnership: true },
        }),
      },
      'an operator hold window is open': {
        context: heldClaim,
        event: ev('dispatcher', {
          type: 'run_settled',
          failure: { failureClass: 'launch_refused', preOwnership: true },
        }),
      },
      'there is no pre-ownership failure': {
        context: unheld(heldClaim),
        event: ev('dispatcher', { type: 'run_settled' }),
      },
    },
  },
  adoptionFenceMatches: {
    pass: adopt(),
    fail: {
      'the fence generation is stale': adopt({ fenceGeneration: 0 }),
      'there is no adoption key': adopt({ adoptionKey: '' }),
      'the attempt number skips': adopt({ attemptNumber: 2 }),
    },
  },
  claimLeaseExpiredWithoutEvidence: {
    pass: { context: claimed, event: ev('scheduler', { type: 'lease_expired', now: '2026-03-01T10:00:01.000Z' }) },
    fail: {
      'the lease is live': { context: claimed, event: ev('scheduler', { type: 'lease_expired' }) },
      'runtime evidence was recorded': {
        context: { ...claimed, runtimeEvidenceRecorded: true },
        event: ev('scheduler', { type: 'lease_expired', now: '2026-03-01T10:00:01.000Z' }),
      },
    },
  },
  cancelReconciledBeforeDispatch: {
    pass: {
      context: claimed,
      event: ev('command_handler', {
        type: 'cancel_acknowledged',
        cancellation: { requestedAt: now, reconciledAt: now },
      }),
    },
    fail: {
      'nothing reconciled it': {
        context: claimed,
        event: ev('command_handler', { type: 'cancel_acknowledged', cancellation: { requestedAt: now } }),
      },
    },
  },
  runtimeAcknowledgedStart: {
    pass: {
      context: heldClaim,
      event: ev('dispatcher', { type: 'runtime_started', attemptId: 'attempt-1', sessionId: 'session-1' }),
    },
    fail: {
      'no session was started': {
        context: heldClaim,
        event: ev('dispatcher', { type: 'runtime_started', attemptId: 'attempt-1', sessionId: '' }),
      },
      'a session is already bound': {
        context: running,
        event: ev('dispatcher', { type: 'runtime_started', attemptId: 'attempt-1', sessionId: 'session-2' }),
      },
    },
  },
  launchRefusedBeforeSideEffect: {
    pass: {
      context: heldClaim,
      event: ev('dispatcher', {
        type: 'launch_refused',
        failure: { failureClass: 'launch_refused', preOwnership: true },
      }),
    },
    fail: {
      'ownership may have been taken': {
        context: heldClaim,
        event: ev('dispatcher', {
          type: 'launch_refused',
          failure: { failureClass: 'transient_dispatch', preOwnership: false },
        }),
      },
    },
  },
  dispatchLeaseExpiredWithoutEvidence: {
    pass: { context: heldClaim, event: ev('scheduler', { type: 'lease_expired', now: '2026-03-01T10:00:01.000Z' }) },
    fail: { 'the lease is live': { context: heldClaim, event: ev('scheduler', { type: 'lease_expired' }) } },
  },
  cancelBeforeAttemptStarted: {
    pass: {
      context: heldClaim,
      event: ev('command_handler', {
        type: 'cancel_acknowledged',
        cancellation: { requestedAt: now, acknowledgedAt: now },
      }),
    },
    fail: {
      'an attempt already started': {
        context: running,
        event: ev('command_handler', {
          type: 'cancel_acknowledged',
          cancellation: { requestedAt: now, acknowledgedAt: now },
        }),
      },
      'it is only requested': {
        context: heldClaim,
        event: ev('command_handler', { type: 'cancel_acknowledged', cancellation: { requestedAt: now } }),
      },
    },
  },
  completionEvidenceWithReceipt: {
    pass: {
      context: running,
      event: ev('dispatcher', { type: 'run_settled', evidence: evidence(), receiptRef: 'receipt-1' }),
    },
    fail: {
      'no receipt was recorded': {
        context: running,
        event: ev('dispatcher', { type: 'run_settled', evidence: evidence() }),
      },
      'there is no evidence': {
        context: running,
        event: ev('dispatcher', { type: 'run_settled', receiptRef: 'receipt-1' }),
      },
      'the evidence is unverified': {
        context: running,
        event: ev('dispatcher', {
          type: 'run_settled',
          evidence: evidence({ verified: false }),
          receiptRef: 'receipt-1',
        }),
      },
    },
  },
  failureEvidenceWithoutHold: {
    pass: {
      context: unheld(running),
      event: ev('dispatcher', { type: 'run_settled', evidence: evidence({ outcome: 'failed', exitCode: 2 }) }),
    },
    fail: {
      'an operator hold window is open': {
        context: running,
        event: ev('dispatcher', { type: 'run_settled', evidence: evidence({ outcome: 'failed', exitCode: 2 }) }),
      },
      'the evidence proves success': {
        context: unheld(running),
        event: ev('dispatcher', { type: 'run_settled', evidence: evidence() }),
      },
    },
  },
  deadlineElapsedWithoutSettlement: {
    pass: {
      context: running,
      event: ev('scheduler', { type: 'timeout', now: '2026-03-01T10:00:00.000Z', settledEvidence: false }),
    },
    fail: {
      'the deadline is ahead': {
        context: running,
        event: ev('scheduler', { type: 'timeout', settledEvidence: false }),
      },
      'settled evidence arrived': {
        context: running,
        event: ev('scheduler', { type: 'timeout', now: '2026-03-01T10:00:00.000Z', settledEvidence: true }),
      },
    },
  },
  cancelAcknowledgedOrReconciled: {
    pass: {
      context: running,
      event: ev('command_handler', {
        type: 'cancel_acknowledged',
        cancellation: { requestedAt: now, reconciledAt: now },
      }),
    },
    fail: {
      'it is only requested': {
        context: running,
        event: ev('command_handler', { type: 'cancel_acknowledged', cancellation: { requestedAt: now } }),
      },
    },
  },
  runtimeLostMidRun: {
    pass: {
      context: running,
      event: ev('scheduler', { type: 'evidence_lost', sessionId: 'session-1', terminalEvidenceSeen: false }),
    },
    fail: {
      'terminal evidence was seen': {
        context: running,
        event: ev('scheduler', { type: 'evidence_lost', sessionId: 'session-1', terminalEvidenceSeen: true }),
      },
      'another session was lost': {
        context: running,
        event: ev('scheduler', { type: 'evidence_lost', sessionId: 'session-2', terminalEvidenceSeen: false }),
      },
    },
  },
  ...recoveryCases,
});
