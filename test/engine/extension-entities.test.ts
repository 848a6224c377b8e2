import { describe, expect, test } from 'vitest';
import { OutboxState, QuarantineState } from '../../machines/extension-states.js';
import { DEFAULT_PRODUCER } from '../../src/command-handler/context.js';
import { isContractError } from '../../src/contract/errors.js';
import type { StepContext } from '../../src/domain/lifecycle.js';
import { createOutbox, moveOutbox, PENDING_LAUNCH, readOutbox } from '../../src/domain/outbox.js';
import { imposeQuarantine, moveQuarantine, readQuarantine } from '../../src/domain/quarantine.js';
import type { QuarantineCause } from '../../src/guards/quarantine.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { StoreTransaction } from '../../src/store/store.js';

const now = '2026-03-02T09:00:00.000Z';

function inStep<R>(store: MemoryStore, body: (step: StepContext) => Promise<R>): Promise<R> {
  return store.transact((tx: StoreTransaction) =>
    body({ tx, now, feed: { producer: DEFAULT_PRODUCER, storeId: 'test', now } }),
  );
}

async function refusal(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
    return undefined;
  } catch (error) {
    return isContractError(error) ? error.code : String(error);
  }
}

const launch = { attemptId: 'attempt-1', occurrenceId: 'occ-1', runId: 'run-1', dispatchGeneration: 1 };

describe('the extension entities commit only what their machines accept', () => {
  test('an outbox moves pending -> sending -> pending -> sending -> done, keeping the pending-launch index in step', async () => {
    const store = new MemoryStore();
    const id = await inStep(store, (s) => createOutbox(s, { ...launch, committedAt: now }));
    expect(await store.read((r) => r.list(PENDING_LAUNCH))).toHaveLength(1);
    const send = { type: 'outbox_send_started', actor: 'dispatcher', attemptState: 'dispatching' } as const;
    await inStep(store, (s) => moveOutbox(s, id, send));
    expect(await store.read((r) => r.list(PENDING_LAUNCH))).toEqual([]);
    const unstarted = { type: 'outbox_send_unstarted', actor: 'dispatcher', neverStarted: true, fenced: true } as const;
    await inStep(store, (s) => moveOutbox(s, id, { ...unstarted, sessionKey: id }));
    expect(await store.read((r) => r.list(PENDING_LAUNCH))).toHaveLength(1);
    await inStep(store, (s) => moveOutbox(s, id, send));
    // The first key was fenced: an answer for it is not an answer for the current send.
    const answer = { type: 'outbox_answer_applied', actor: 'dispatcher' } as const;
    const before = await store.read((r) => r.get('outbox', id));
    expect(await refusal(inStep(store, (s) => moveOutbox(s, id, { ...answer, sessionKey: id })))).toBe(
      'ILLEGAL_TRANSITION',
    );
    expect(await store.read((r) => r.get('outbox', id))).toEqual(before);
    const done = await inStep(store, (s) => moveOutbox(s, id, { ...answer, sessionKey: `${id}~1` }));
    expect(done).toMatchObject({ state: OutboxState.done, entry: { resends: 1, sentAt: now } });
    expect((await store.read((r) => readOutbox(r, id)))?.state).toBe(OutboxState.done);
  });

  test('the command handler cannot send a launch, and a cancel must name the launch’s occurrence', async () => {
    const store = new MemoryStore();
    const id = await inStep(store, (s) => createOutbox(s, { ...launch, committedAt: now }));
    const send = { type: 'outbox_send_started', actor: 'command_handler', attemptState: 'dispatching' } as const;
    expect(await refusal(inStep(store, (s) => moveOutbox(s, id, send)))).toBe('ILLEGAL_TRANSITION');
    const cancel = { type: 'outbox_work_cancelled', actor: 'command_handler', reason: 'occurrence_cancelled' } as const;
    expect(await refusal(inStep(store, (s) => moveOutbox(s, id, { ...cancel, occurrenceId: 'occ-2' })))).toBe(
      'ILLEGAL_TRANSITION',
    );
    expect(await store.read((r) => r.list(PENDING_LAUNCH))).toHaveLength(1);
    await inStep(store, (s) => moveOutbox(s, id, { ...cancel, occurrenceId: 'occ-1' }));
    expect((await store.read((r) => readOutbox(r, id)))?.state).toBe(OutboxState.cancelled);
    expect(await store.read((r) => r.list(PENDING_LAUNCH))).toEqual([]);
  });

  test('a quarantine needs a proven cause, is imposed once, and only a quarantined automation is lifted', async () => {
    const store = new MemoryStore();
    const unproven: { actor: 'dispatcher'; reason: string; cause: QuarantineCause } = {
      actor: 'dispatcher',
      reason: 'not exhausted',
      cause: {
        kind: 'retries_exhausted',
        retryPolicy: { maxAttempts: 3, backoffPolicy: 'none', retryableClasses: ['runtime_unavailable'] },
        attempts: 2,
        failureClass: 'runtime_unavailable',
      },
    };
    expect(await refusal(inStep(store, (s) => imposeQuarantine(s, 'daily', unproven)))).toBe('ILLEGAL_TRANSITION');
    expect(await store.read((r) => r.get('quarantine', 'daily'))).toBeUndefined();
    const lift = { type: 'quarantine_lifted', actor: 'command_handler' } as const;
    const proven = { ...unproven, reason: 'exhausted', cause: { ...unproven.cause, attempts: 3 } as QuarantineCause };
    expect(await inStep(store, (s) => imposeQuarantine(s, 'daily', proven))).toBe(true);
    expect(await inStep(store, (s) => imposeQuarantine(s, 'daily', { ...proven, reason: 'again' }))).toBe(false);
    expect(await store.read((r) => readQuarantine(r, 'daily'))).toEqual({
      state: QuarantineState.quarantined,
      since: now,
      reason: 'exhausted',
    });
    expect(await inStep(store, (s) => moveQuarantine(s, 'daily', lift))).toMatchObject({ reason: 'exhausted' });
    expect((await store.read((r) => readQuarantine(r, 'daily'))).state).toBe(QuarantineState.clear);
    expect(await refusal(inStep(store, (s) => moveQuarantine(s, 'daily', lift)))).toBe('ILLEGAL_TRANSITION');
  });
});
