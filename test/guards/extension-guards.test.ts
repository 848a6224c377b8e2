import { describe, expect, test } from 'vitest';
import {
  applyOutboxEvent,
  createOutboxContext,
  outboxGuards,
  outboxSessionKey,
  type OutboxContext,
  type OutboxEvent,
} from '../../src/guards/outbox.js';
import {
  applyQuarantineEvent,
  createQuarantineContext,
  quarantineGuards,
  type QuarantineCause,
  type QuarantineContext,
  type QuarantineEvent,
} from '../../src/guards/quarantine.js';
import {
  applyRunHoldEvent,
  createRunHoldContext,
  runHoldGuards,
  type RunHoldContext,
  type RunHoldEvent,
} from '../../src/guards/run-hold.js';
import {
  applyDeliveryEvent,
  createDeliveryContext,
  deliveryGuards,
  type DeliveryContext,
  type DeliveryEvent,
} from '../../src/guards/delivery.js';
import type { ExtensionMachineId } from '../../src/spec/extension-spec.js';
import { specOf } from '../support/spec-fixtures.js';
import { describeGuards } from './guard-cases.js';

const now = '2026-03-01T09:10:00.000Z';
const base = { actor: 'dispatcher' as const, now };

const catalogues: Record<ExtensionMachineId, Record<string, unknown>> = {
  'x-coven-automata.outbox.v1': outboxGuards,
  'x-coven-automata.run-hold.v1': runHoldGuards,
  'x-coven-automata.quarantine.v1': quarantineGuards,
  'x-coven-automata.delivery.v1': deliveryGuards,
};

describe.each(Object.keys(catalogues) as ExtensionMachineId[])('guard catalogue of %s', (id) => {
  const specIds = new Set(specOf(id).transitions.flatMap((t) => (t.guard ? [t.guard.id] : [])));
  test('implements exactly the guard ids the extension spec names', () => {
    expect(new Set(Object.keys(catalogues[id]))).toEqual(specIds);
  });
});

type OutboxArgs = { context: OutboxContext; event: OutboxEvent };
const outbox = createOutboxContext({
  attemptId: 'attempt-1',
  occurrenceId: 'occ-1',
  runId: 'run-1',
  dispatchGeneration: 2,
  committedAt: '2026-03-01T09:00:00.000Z',
});
const resent: OutboxContext = { ...outbox, resends: 2 };
const o = (event: OutboxEvent, context = outbox): OutboxArgs => ({ context, event });
const unstarted = (sessionKey: string, neverStarted = true, fenced = true) =>
  o({ ...base, type: 'outbox_send_unstarted', sessionKey, neverStarted, fenced }, resent);

describeGuards<OutboxArgs>('x-coven-automata.outbox.v1 guards', outboxGuards, {
  attemptStillDispatching: {
    pass: o({ ...base, type: 'outbox_send_started', attemptState: 'dispatching' }),
    fail: {
      'the attempt was cancelled': o({ ...base, type: 'outbox_send_started', attemptState: 'cancelled' }),
      'the event is not a send': o({ ...base, type: 'outbox_release_abandoned', attemptState: 'dispatching' }),
    },
  },
  attemptNoLongerDispatching: {
    pass: o({ ...base, type: 'outbox_release_abandoned', attemptState: 'cancelled' }),
    fail: {
      'the attempt is still dispatching': o({ ...base, type: 'outbox_release_abandoned', attemptState: 'dispatching' }),
      'the attempt state is unknown': o({ ...base, type: 'outbox_release_abandoned', attemptState: '' }),
    },
  },
  cancellationNamesLaunch: {
    pass: o({
      ...base,
      actor: 'command_handler',
      type: 'outbox_work_cancelled',
      occurrenceId: 'occ-1',
      reason: 'occurrence_cancelled',
    }),
    fail: {
      'another occurrence was cancelled': o({
        ...base,
        actor: 'command_handler',
        type: 'outbox_work_cancelled',
        occurrenceId: 'occ-2',
        reason: 'definition_tombstoned',
      }),
    },
  },
  answerForCurrentSend: {
    pass: o({ ...base, type: 'outbox_answer_applied', sessionKey: 'attempt-1#2~2' }, resent),
    fail: {
      'the answer is for an earlier, fenced key': o(
        { ...base, type: 'outbox_answer_applied', sessionKey: 'attempt-1#2' },
        resent,
      ),
    },
  },
  runtimeFencedUnstartedSend: {
    pass: unstarted('attempt-1#2~2'),
    fail: {
      'the proof is for an earlier key': unstarted('attempt-1#2~1'),
      'the send may have started': unstarted('attempt-1#2~2', false),
      'the key is not fenced': unstarted('attempt-1#2~2', true, false),
    },
  },
});

describe('outbox context', () => {
  test('is keyed <attemptId>#<dispatchGeneration>, sends under a fresh key after each proven-unstarted send', () => {
    expect(outbox.outboxId).toBe('attempt-1#2');
    expect(outboxSessionKey(outbox)).toBe('attempt-1#2');
    const sent = applyOutboxEvent(outbox, { ...base, type: 'outbox_send_started', attemptState: 'dispatching' });
    expect(sent.sentAt).toBe(now);
    const requeued = applyOutboxEvent(sent, {
      ...base,
      type: 'outbox_send_unstarted',
      sessionKey: 'attempt-1#2',
      neverStarted: true,
      fenced: true,
    });
    expect(requeued.resends).toBe(1);
    expect(outboxSessionKey(requeued)).toBe('attempt-1#2~1');
  });
});

type HoldArgs = { context: RunHoldContext; event: RunHoldEvent };
const policy = { maxAttempts: 3, backoffPolicy: 'none' as const, retryableClasses: ['runtime_unavailable' as const] };
const hold = createRunHoldContext({
  runId: 'run-1',
  occurrenceId: 'occ-1',
  deadlineAt: '2026-03-01T09:30:00.000Z',
  retryPolicy: policy,
});
const afterDeadline = '2026-03-01T10:00:00.000Z';
const opened = (attempts: number, failureClass?: string, context = hold, at = now): HoldArgs => ({
  context,
  event: { ...base, now: at, type: 'hold_opened', attempts, ...(failureClass === undefined ? {} : { failureClass }) },
});
const h = (event: RunHoldEvent, context = hold): HoldArgs => ({ context, event });

describeGuards<HoldArgs>('x-coven-automata.run-hold.v1 guards', runHoldGuards, {
  holdWindowOpen: {
    pass: opened(1, 'runtime_unavailable'),
    fail: {
      'retryable failures exhausted the policy': opened(3, 'runtime_unavailable'),
      'the run is not ordinary': opened(1, 'runtime_error', { ...hold, operatorHold: false }),
      'the deadline passed': opened(1, 'runtime_error', hold, afterDeadline),
      'ten attempts were made': opened(10),
    },
  },
  retryBeforeHoldDeadline: {
    pass: h({ ...base, actor: 'command_handler', type: 'hold_retry_accepted', attemptId: 'attempt-2' }),
    fail: {
      'the deadline passed': h({
        ...base,
        actor: 'command_handler',
        now: afterDeadline,
        type: 'hold_retry_accepted',
        attemptId: 'attempt-2',
      }),
      'no attempt is opened': h({ ...base, actor: 'command_handler', type: 'hold_retry_accepted', attemptId: '' }),
    },
  },
  holdDeadlinePassed: {
    pass: h({ ...base, actor: 'scheduler', now: afterDeadline, type: 'hold_deadline_expired' }),
    fail: {
      'the deadline is ahead': h({ ...base, actor: 'scheduler', type: 'hold_deadline_expired' }),
      'the run has no deadline': h(
        { ...base, actor: 'scheduler', now: afterDeadline, type: 'hold_deadline_expired' },
        { ...hold, deadlineAt: null },
      ),
      'the deadline is unparsable': h(
        { ...base, actor: 'scheduler', now: afterDeadline, type: 'hold_deadline_expired' },
        { ...hold, deadlineAt: 'soon' },
      ),
    },
  },
});

describe('run-hold context', () => {
  test('records when and why a hold opened, and forgets it when an operator retry clears it', () => {
    const held = applyRunHoldEvent(hold, opened(1, 'runtime_unavailable').event);
    expect([held.heldSince, held.heldFor]).toEqual([now, 'runtime_unavailable']);
    const cleared = applyRunHoldEvent(held, {
      ...base,
      actor: 'command_handler',
      type: 'hold_retry_accepted',
      attemptId: 'a-2',
    });
    expect([cleared.heldSince, cleared.heldFor]).toEqual([null, null]);
  });
});

type QuarantineArgs = { context: QuarantineContext; event: QuarantineEvent };
const quarantine = createQuarantineContext({ automationId: 'nightly-report' });
const imposed = (cause: QuarantineCause, reason = 'retries exhausted'): QuarantineArgs => ({
  context: quarantine,
  event: { ...base, type: 'quarantine_imposed', reason, cause },
});
const exhausted = (attempts: number, failureClass = 'runtime_unavailable'): QuarantineCause => ({
  kind: 'retries_exhausted',
  retryPolicy: policy,
  attempts,
  failureClass,
});

describeGuards<QuarantineArgs>('x-coven-automata.quarantine.v1 guards', quarantineGuards, {
  quarantineCauseProven: {
    pass: imposed(exhausted(3)),
    fail: {
      'retries remain': imposed(exhausted(2)),
      'the failure class is not retryable': imposed(exhausted(3, 'runtime_error')),
      'no reason is given': imposed(exhausted(3), ''),
      'the digests agree': imposed({
        kind: 'definition_integrity',
        computedDigest: 'a'.repeat(64),
        expectedDigest: 'a'.repeat(64),
      }),
    },
  },
});

describe('quarantine context', () => {
  test('an integrity failure is a proven cause; since and reason are set on impose and cleared on lift', () => {
    const integrity = imposed(
      { kind: 'definition_integrity', computedDigest: 'a'.repeat(64), expectedDigest: null },
      'digest',
    );
    expect(quarantineGuards.quarantineCauseProven(integrity)).toBe(true);
    const on = applyQuarantineEvent(quarantine, integrity.event);
    expect([on.since, on.reason]).toEqual([now, 'digest']);
    const off = applyQuarantineEvent(on, { ...base, actor: 'command_handler', type: 'quarantine_lifted' });
    expect([off.since, off.reason]).toEqual([null, null]);
  });
});

type DeliveryArgs = { context: DeliveryContext; event: DeliveryEvent };
const delivery = createDeliveryContext({
  attemptId: 'attempt-1',
  runId: 'run-1',
  occurrenceId: 'occ-1',
  automationId: 'nightly-report',
  target: 'reports/nightly.md',
});
const worker = { actor: 'worker' as const, now };
const started = (
  evidence = { outcome: 'succeeded', exitCode: 0 as number | null, verified: true },
  writer = 'e-1',
) => ({
  context: delivery,
  event: { ...worker, type: 'delivery_started' as const, writer, evidence },
});
const interrupted = (writerStillWriting: boolean, reason = 'found pending after a restart'): DeliveryArgs => ({
  context: delivery,
  event: { ...worker, type: 'delivery_interrupted', writerStillWriting, reason },
});

describeGuards<DeliveryArgs>('x-coven-automata.delivery.v1 guards', deliveryGuards, {
  deliveryOwedForSuccess: {
    pass: started(),
    fail: {
      'the evidence is a failure': started({ outcome: 'failed', exitCode: 1, verified: true }),
      'the exit code is not zero': started({ outcome: 'succeeded', exitCode: 2, verified: true }),
      'the evidence is unverified': started({ outcome: 'succeeded', exitCode: 0, verified: false }),
      'no writer is named': started(undefined, ''),
    },
  },
  commitProven: {
    pass: { context: delivery, event: { ...worker, type: 'delivery_committed', digest: 'b'.repeat(64) } },
    fail: {
      'the digest is not SHA-256 hex': {
        context: delivery,
        event: { ...worker, type: 'delivery_committed', digest: 'x' },
      },
    },
  },
  commitFailureReported: {
    pass: { context: delivery, event: { ...worker, type: 'delivery_failed', reason: 'rename refused' } },
    fail: { 'no reason is given': { context: delivery, event: { ...worker, type: 'delivery_failed', reason: '' } } },
  },
  writerGone: {
    pass: interrupted(false),
    fail: { 'the writer is still writing': interrupted(true), 'no reason is given': interrupted(false, '') },
  },
});

describe('delivery context', () => {
  test('start names attempt and writer; commit keeps the digest; an interruption keeps its reason', () => {
    const pending = applyDeliveryEvent(delivery, started().event);
    expect([pending.attemptId, pending.writer, pending.pendingSince]).toEqual(['attempt-1', 'e-1', now]);
    const committed = applyDeliveryEvent(pending, { ...worker, type: 'delivery_committed', digest: 'c'.repeat(64) });
    expect([committed.digest, committed.settledAt]).toEqual(['c'.repeat(64), now]);
    const lost = applyDeliveryEvent(pending, interrupted(false).event);
    expect([lost.reason, lost.digest]).toEqual(['found pending after a restart', null]);
  });
});
