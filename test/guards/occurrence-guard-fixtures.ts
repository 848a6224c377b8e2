import type { TerminalEvidence } from '../../src/guards/common.js';
import {
  createOccurrenceContext,
  type OccurrenceContext,
  type OccurrenceEvent,
  type SideEffectFacts,
} from '../../src/guards/occurrence.js';

// The contexts and event builders the occurrence guard cases are written with.
export type Args = { context: OccurrenceContext; event: OccurrenceEvent };
export const now = '2026-03-01T09:10:00.000Z';
export const later = '2026-03-01T11:00:00.000Z';
export const planned = createOccurrenceContext({
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
export const claimed: OccurrenceContext = {
  ...planned,
  fence: { generation: 1, claimedBy: 'scheduler-1', leaseExpiresAt: '2026-03-01T10:00:00.000Z' },
};
export const heldClaim: OccurrenceContext = { ...claimed, attemptCount: 1, deadlineAt: '2026-03-01T10:00:00.000Z' };
export const running: OccurrenceContext = { ...heldClaim, sessionId: 'session-1', runtimeEvidenceRecorded: true };
export const unheld = (c: OccurrenceContext): OccurrenceContext => ({ ...c, operatorHold: false });
export const ev = (actor: 'scheduler' | 'dispatcher' | 'command_handler', e: Record<string, unknown>) =>
  ({ actor, now, ...e }) as OccurrenceEvent;
export const evidence = (over: Partial<TerminalEvidence> = {}): TerminalEvidence => ({
  sessionId: 'session-1',
  outcome: 'succeeded',
  exitCode: 0,
  verified: true,
  ...over,
});
export const retry = (over: Record<string, unknown> = {}, context = running): Args => ({
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
export const autoRetry = (over: Record<string, unknown> = {}, context = heldClaim): Args => ({
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
export const sideEffects = (over: Partial<SideEffectFacts> = {}): SideEffectFacts => ({
  launched: true,
  boundClass: 'local_read',
  proven: true,
  ...over,
});
export const adopt = (over: Record<string, unknown> = {}, context = claimed): Args => ({
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
export const recoverAttempt = (over: Record<string, unknown> = {}): Args => ({
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
