import type { TerminalEvidence } from '../../src/guards/common.js';
import {
  createOccurrenceContext,
  occurrenceGuards,
  type OccurrenceContext,
  type OccurrenceEvent,
  type SideEffectFacts,
} from '../../src/guards/occurrence.js';
import { describeGuards } from './guard-cases.js';

type Args = { context: OccurrenceContext; event: OccurrenceEvent };
const now = '2026-03-01T09:10:00.000Z';
const later = '2026-03-01T11:00:00.000Z';
const planned = createOccurrenceContext({
  occurrenceId: 'nightly-1',
  automationId: 'nightly',
  automationRevision: 2,
  definitionDigest: 'a'.repeat(64),
  scheduledFor: '2026-03-01T09:00:00.000Z',
  retryPolicy: {
    maxAttempts: 3,
    backoffPolicy: 'fixed',
    backoffSeconds: 30,
    retryableClasses: ['runtime_unavailable'],
  },
  perRunMinutes: 60,
});
const claimed: OccurrenceContext = {
  ...planned,
  fence: { generation: 1, claimedBy: 'scheduler-1', leaseExpiresAt: '2026-03-01T10:00:00.000Z' },
};
const heldClaim: OccurrenceContext = { ...claimed, attemptCount: 1, deadlineAt: '2026-03-01T10:00:00.000Z' };
const running: OccurrenceContext = { ...heldClaim, sessionId: 'session-1', runtimeEvidenceRecorded: true };
const unheld = (c: OccurrenceContext): OccurrenceContext => ({ ...c, operatorHold: false });
const ev = (actor: 'scheduler' | 'dispatcher' | 'command_handler', e: Record<string, unknown>) =>
  ({ actor, now, ...e }) as OccurrenceEvent;
const evidence = (over: Partial<TerminalEvidence> = {}): TerminalEvidence => ({
  sessionId: 'session-1',
  outcome: 'succeeded',
  exitCode: 0,
  verified: true,
  ...over,
});
const retry = (over: Record<string, unknown> = {}, context = running): Args => ({
  context,
  event: ev('command_handler', {
    type: 'operator_retry',
    runId: 'run-1',
    priorAttemptNumber: 1,
    priorDisposition: 'failed',
    latestAttemptTerminal: true,
    runHeld: true,
    quarantined: false,
    stopUnresolved: false,
    ...over,
  }),
});
const autoRetry = (over: Record<string, unknown> = {}, context = heldClaim): Args => ({
  context,
  event: ev('dispatcher', {
    type: 'automatic_retry',
    failure: { failureClass: 'runtime_unavailable', preOwnership: true },
    priorAttemptNumber: 1,
    priorDisposition: 'failed',
    notBefore: '2026-03-01T09:10:30.000Z',
    ...over,
  }),
});
const sideEffects = (over: Partial<SideEffectFacts> = {}): SideEffectFacts => ({
  launched: true,
  boundClass: 'local_read',
  proven: true,
  ...over,
});
const adopt = (over: Record<string, unknown> = {}, context = claimed): Args => ({
  context,
  event: ev('dispatcher', {
    type: 'attempt_adopted',
    attemptId: 'attempt-1',
    attemptNumber: 1,
    adoptionKey: 'automation:run-1:1',
    fenceGeneration: 1,
    ...over,
  }),
});
const recoverAttempt = (over: Record<string, unknown> = {}): Args => ({
  context: { ...running, ambiguousDisposition: true },
  event: ev('command_handler', {
    type: 'operator_recovery_attempt',
    evidenceDetermination: 'retry_with_new_attempt',
    statement: 'verified nothing was written',
    attemptId: 'attempt-2',
    attemptNumber: 2,
    adoptionKey: 'automation:run-1:2',
    priorDisposition: 'ambiguous',
    leaseExpiresAt: '2026-03-01T09:50:00.000Z',
    ...over,
  }),
});

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
  noSideEffectsPossible: {
    pass: { context: claimed, event: ev('scheduler', { type: 'recovery_determined', sideEffects: sideEffects() }) },
    fail: {
      'the bound allows writes': {
        context: claimed,
        event: ev('scheduler', {
          type: 'recovery_determined',
          sideEffects: sideEffects({ boundClass: 'local_write' }),
        }),
      },
      'the bound is not proven': {
        context: claimed,
        event: ev('scheduler', { type: 'recovery_determined', sideEffects: sideEffects({ proven: false }) }),
      },
    },
  },
  sideEffectsNotRuledOut: {
    pass: {
      context: claimed,
      event: ev('scheduler', {
        type: 'recovery_ambiguous',
        sideEffects: sideEffects({ boundClass: 'external_mutation' }),
      }),
    },
    fail: {
      'nothing was launched': {
        context: claimed,
        event: ev('scheduler', {
          type: 'recovery_ambiguous',
          sideEffects: sideEffects({ launched: false, boundClass: 'external_mutation' }),
        }),
      },
    },
  },
  recoverFailedDeterministic: {
    pass: {
      context: running,
      event: ev('command_handler', {
        type: 'operator_recovery_failed',
        evidenceDetermination: 'failed_deterministic',
        statement: 'the job never wrote',
      }),
    },
    fail: {
      'the determination asks for a retry': {
        context: running,
        event: ev('command_handler', {
          type: 'operator_recovery_failed',
          evidenceDetermination: 'retry_with_new_attempt',
          statement: 'x',
        }),
      },
      'there is no statement': {
        context: running,
        event: ev('command_handler', {
          type: 'operator_recovery_failed',
          evidenceDetermination: 'failed_deterministic',
          statement: '',
        }),
      },
    },
  },
  recoverWithNewAttempt: {
    pass: recoverAttempt(),
    fail: {
      'the prior disposition is not ambiguous': recoverAttempt({ priorDisposition: 'failed' }),
      'the determination is failed_deterministic': recoverAttempt({ evidenceDetermination: 'failed_deterministic' }),
      'the deadline passed': recoverAttempt({ now: later, leaseExpiresAt: '2026-03-01T12:00:00.000Z' }),
      'the attempt number skips': recoverAttempt({ attemptNumber: 3 }),
    },
  },
});
