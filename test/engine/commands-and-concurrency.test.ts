import { describe, expect, test } from 'vitest';
import { acceptAndDispatch } from '../../src/dispatcher/dispatcher.js';
import { createEngine } from '../../src/engine/engine.js';
import { harness } from '../support/engine-harness.js';
import { command, expectRejected } from '../support/commands.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

describe('operator commands on live work', () => {
  test('cancelling a running attempt is a request: CANCEL_PENDING until the runtime acknowledges, then all cancelled', async () => {
    const h = await harness();
    h.runtime.enqueue('hang');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const occurrenceId = (await h.read.occurrences())[0]!.occurrenceId;
    const pending = expectRejected(
      await h.engine.commands.handle(command('occurrence.cancel.v1', { occurrenceId, reason: 'operator stop' })),
      'CANCEL_PENDING',
      409,
    );
    expect(pending.error?.retryable).toBe(true);
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'running',
      cancellation: { requestedAt: at('09:00:00') },
    });
    h.clock.set(at('09:01:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'cancelled',
      cancellation: { acknowledgedAt: at('09:01:00') },
    });
    expect((await h.read.runs())[0]).toMatchObject({ state: 'cancelled' });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'cancelled' });
    const again = await h.ok(command('occurrence.cancel.v1', { occurrenceId }));
    expect(again.result).toMatchObject({ status: 'cancelled' });
  });

  test('cancelling a planned retry settles at once; a later slot is skipped while work is live; settled is refused', async () => {
    const waiting = await harness();
    waiting.runtime.enqueue('unavailable');
    waiting.clock.set(at('09:00:00'));
    await waiting.engine.tick();
    const planned = (await waiting.read.occurrences())[0]!;
    expect(planned).toMatchObject({ state: 'planned' });
    const done = await waiting.ok(command('occurrence.cancel.v1', { occurrenceId: planned.occurrenceId }));
    expect(done.result).toMatchObject({ status: 'cancelled' });
    expect((await waiting.read.attempts()).map((a) => a.state)).toEqual(['failed', 'cancelled']);
    expect((await waiting.read.runs())[0]).toMatchObject({ state: 'cancelled' });
    waiting.clock.set(at('09:01:00'));
    await waiting.engine.tick();
    expect(waiting.runtime.launches).toHaveLength(0);

    const h = await harness({ rrule: 'FREQ=DAILY;BYHOUR=9,10', perRunMinutes: 120 });
    h.runtime.enqueue('hang');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('10:00:00'));
    await h.engine.tick();
    const skipped = (await h.read.occurrences()).find((o) => o.scheduledFor === at('10:00:00'));
    expect(skipped).toMatchObject({ state: 'skipped', misfireDisposition: 'skipped_overlap' });
    expectRejected(
      await h.engine.commands.handle(command('occurrence.cancel.v1', { occurrenceId: skipped!.occurrenceId })),
      'ILLEGAL_TRANSITION',
    );
    expectRejected(
      await h.engine.commands.handle(command('occurrence.cancel.v1', { occurrenceId: 'missing-1' })),
      'NOT_FOUND',
    );
  });

  test('attempt.cancel and run.cancel reach the same work; attempt.cancel refuses a non-current attempt', async () => {
    const h = await harness();
    h.runtime.enqueue('refuse', 'hang');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const runId = (await h.read.runs())[0]!.runId as string;
    await h.ok(command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'failed' }));
    const first = (await h.read.attempts()).find((a) => a.attemptNumber === 1)!.attemptId;
    expectRejected(
      await h.engine.commands.handle(command('attempt.cancel.v1', { attemptId: first })),
      'ILLEGAL_TRANSITION',
    );
    // The retry's attempt 2 is adopted, not dispatched: cancelling settles everything at once.
    const cancelled = await h.ok(command('run.cancel.v1', { runId }));
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
    expect((await h.read.attempts()).map((a) => a.state)).toEqual(['failed', 'cancelled']);
    expect((await h.read.runs())[0]).toMatchObject({ state: 'cancelled' });
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'cancelled' });
  });

  test('runNow launches at once, replays without relaunching, and is refused while work is live', async () => {
    const h = await harness();
    h.runtime.durationMs = 10 * 60_000;
    h.clock.set(at('07:00:00'));
    const first = await h.ok(
      command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-request-0001' }),
    );
    expect(first.result).toMatchObject({ status: 'claimed', occurrenceKey: 'daily@manual-manual-request-0001' });
    expect(h.runtime.launches).toHaveLength(1);
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'running',
      triggerIdentity: { kind: 'manual.request' },
    });
    const replay = await h.engine.commands.handle(
      command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-request-0001' }),
    );
    expect(replay.outcome).toBe('replayed');
    expect(h.runtime.launches).toHaveLength(1);
    expectRejected(
      await h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' })),
      'OVERLAP_FORBIDDEN',
      409,
    );
    expectRejected(
      await h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'nope' })),
      'NOT_FOUND',
    );
  });

  test('tombstoning cancels unlaunched work and nothing is planned, claimed or run afterwards; history stays readable', async () => {
    const h = await harness();
    h.runtime.enqueue('refuse');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    const tomb = await h.ok(command('definition.tombstone.v1', { automationId: 'daily' }, { expectedRevision: 3 }));
    expect(tomb.result).toMatchObject({ cancelledOccurrences: [(await h.read.occurrences())[0]!.occurrenceId] });
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'cancelled' });
    h.clock.set('2026-03-03T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    expect(h.runtime.launches).toHaveLength(0);
    const history = await h.ok(command('run.history.v1', { automationId: 'daily' }));
    expect((history.result!.runs as unknown[]).length).toBe(1);
  });
});

describe('crashes, restarts and competing engines', () => {
  test('a launch committed but never released before a crash is released exactly once by the next engine', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    // Engine A commits the plan, the claim and the accept/dispatch/outbox, then dies before launching.
    const { planDueSlots } = await import('../../src/scheduler/planning.js');
    const { advanceAll } = await import('../../src/scheduler/pass.js');
    await planDueSlots(h.engine.services);
    await advanceAll(h.engine.services);
    const occurrenceId = (await h.read.occurrences())[0]!.occurrenceId as string;
    const outboxId = await h.engine.services.step((step) => acceptAndDispatch(h.engine.services, step, occurrenceId));
    expect(outboxId).toBeDefined();
    expect(h.runtime.launches).toHaveLength(0);
    const restarted = createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-b' });
    await restarted.tick();
    await restarted.tick();
    expect(h.runtime.launches).toHaveLength(1);
    h.clock.set(at('09:02:00'));
    await restarted.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('two engines on one store never accept two runs for one fence nor launch twice', async () => {
    const h = await harness();
    const second = createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-b' });
    for (const minute of ['09:00:00', '09:00:30', '09:02:00']) {
      h.clock.set(at(minute));
      await Promise.all([h.engine.tick(), second.tick()]);
    }
    expect(await h.read.runs()).toHaveLength(1);
    expect(h.runtime.launches).toHaveLength(1);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded', fence: { generation: 1 } });
  });
});
