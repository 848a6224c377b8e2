import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { describe, expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command, expectRejected } from '../support/commands.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

describe('retries, holds, quarantine and recovery', () => {
  test('a retryable pre-ownership failure retries automatically after the pinned backoff, with a new attempt', async () => {
    const h = await harness();
    h.runtime.enqueue('unavailable', 'succeed');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const [waiting] = await h.read.occurrences();
    expect(waiting).toMatchObject({ state: 'planned', stateReason: 'automatic retry after runtime_unavailable' });
    const firstAttempt = (await h.read.attempts()).find((a) => a.attemptNumber === 1);
    expect(firstAttempt).toMatchObject({ state: 'failed' });
    h.clock.set(at('09:00:20'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'planned' });
    h.clock.set(at('09:00:30'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded', fence: { generation: 2 } });
    const attempts = await h.read.attempts();
    expect(attempts.map((a) => [a.attemptNumber, a.state, a.retryClassification])).toEqual([
      [1, 'failed', { classification: 'initial', eligibleClasses: ['runtime_unavailable', 'transient_dispatch'] }],
      [2, 'succeeded', { classification: 'automatic_retry' }],
    ]);
    expect(attempts[1]).toMatchObject({
      priorDisposition: { attemptNumber: 1, outcome: 'failed' },
      notBefore: at('09:00:30'),
    });
    // retry-new-attempt: the prior attempt's record is untouched by the retry.
    expect(attempts[0]).toEqual(firstAttempt);
    expect((await h.read.runs())[0]).toMatchObject({ state: 'succeeded', attemptCount: 2 });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('retryable failures that exhaust the policy fail the run and quarantine the automation until lifted', async () => {
    const h = await harness({
      retry: { maxAttempts: 2, backoffPolicy: 'none', retryableClasses: ['runtime_unavailable'] },
    });
    h.runtime.enqueue('unavailable', 'unavailable');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'failed' });
    expect((await h.read.runs())[0]).toMatchObject({ state: 'failed', attemptCount: 2 });
    const health = await h.ok(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result!.health).toMatchObject({ quarantined: true, nextDueAt: null });
    expectRejected(
      await h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' })),
      'ILLEGAL_TRANSITION',
    );
    h.clock.set('2026-03-03T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    await h.ok(command('x-coven-automata.definition.unquarantine.v1', { automationId: 'daily' }));
    h.clock.set('2026-03-04T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(1);
  });

  test('a deterministic refusal holds the ordinary run; an operator retry opens attempt 2 and it succeeds', async () => {
    const h = await harness();
    h.runtime.enqueue('refuse', 'succeed');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const [occurrence] = await h.read.occurrences();
    expect(occurrence).toMatchObject({ state: 'claimed', stateReason: 'held for operator retry after launch_refused' });
    const [run] = await h.read.runs();
    expect(run).toMatchObject({ state: 'running', stateReason: 'held_for_operator_retry' });
    // A later pass keeps it held: no lease-expiry recovery for a held run.
    h.clock.set(at('09:10:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    const runId = run!.runId as string;
    expectRejected(
      await h.engine.commands.handle(
        command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'timed_out' }),
      ),
      'RETRY_DISPOSITION_INVALID',
      422,
    );
    const retried = await h.ok(
      command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'failed' }),
    );
    expect(retried.result).toMatchObject({ attemptNumber: 2, priorDisposition: 'failed', status: 'planned' });
    await h.engine.tick();
    h.clock.set(at('09:12:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect(
      (await h.read.attempts()).map((a) => [
        a.attemptNumber,
        a.state,
        (a.retryClassification as { classification: string }).classification,
      ]),
    ).toEqual([
      [1, 'failed', 'initial'],
      [2, 'succeeded', 'operator_retry'],
    ]);
  });

  test('a held run whose deadline passes settles failed; a retry after it is DEADLINE_EXCEEDED', async () => {
    const h = await harness({ perRunMinutes: 20 });
    h.runtime.enqueue('fail');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'running',
      stateReason: 'held for operator retry after a failed attempt',
    });
    const runId = (await h.read.runs())[0]!.runId as string;
    h.clock.set(at('09:20:00'));
    expectRejected(
      await h.engine.commands.handle(
        command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'failed' }),
      ),
      'DEADLINE_EXCEEDED',
      504,
    );
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'failed',
      stateReason: 'held run deadline expired',
    });
    expect((await h.read.runs())[0]).toMatchObject({ state: 'failed' });
  });

  test('a session lost after its side effect needs the operator: no automatic retry, ambiguous retry refused, recover opens attempt 2', async () => {
    const h = await harness();
    h.runtime.enqueue('lost-after-side-effect', 'succeed');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    const [occurrence] = await h.read.occurrences();
    expect(occurrence).toMatchObject({ state: 'recovery_required', recovery: { evidence: 'runtime_lost' } });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'ambiguous' });
    const runId = (await h.read.runs())[0]!.runId as string;
    // ambiguous-never-auto-retried: passes leave it alone, and an operator retry is refused.
    h.clock.set(at('09:05:00'));
    await h.engine.tick();
    expect(await h.read.attempts()).toHaveLength(1);
    expectRejected(
      await h.engine.commands.handle(
        command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'ambiguous' }),
      ),
      'AMBIGUOUS_RETRY_FORBIDDEN',
      422,
    );
    expectRejected(
      await h.engine.commands.handle(command('occurrence.cancel.v1', { occurrenceId: occurrence!.occurrenceId })),
      'ILLEGAL_TRANSITION',
    );
    const recovered = await h.ok(
      command('occurrence.recover.v1', {
        occurrenceId: occurrence!.occurrenceId,
        evidenceDetermination: 'retry_with_new_attempt',
        statement: 'Checked the notes target: nothing was written.',
      }),
    );
    expect(recovered.result).toMatchObject({ status: 'dispatching', attemptNumber: 2 });
    h.clock.set(at('09:07:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect((await h.read.attempts()).map((a) => [a.state, a.priorDisposition])).toEqual([
      ['ambiguous', undefined],
      ['succeeded', { attemptNumber: 1, outcome: 'ambiguous' }],
    ]);
  });

  test('recover with failed_deterministic settles the occurrence failed and the run ambiguous', async () => {
    const h = await harness();
    h.runtime.enqueue('lost-after-side-effect');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    const occurrenceId = (await h.read.occurrences())[0]!.occurrenceId;
    expectRejected(
      await h.engine.commands.handle(
        command('occurrence.recover.v1', {
          occurrenceId: 'nope-1',
          evidenceDetermination: 'failed_deterministic',
          statement: 'x',
        }),
      ),
      'NOT_FOUND',
    );
    await h.ok(
      command('occurrence.recover.v1', {
        occurrenceId,
        evidenceDetermination: 'failed_deterministic',
        statement: 'The job exited before writing.',
      }),
    );
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'failed',
      recovery: { resolvedDisposition: 'failed_deterministic' },
    });
    expect((await h.read.runs())[0]).toMatchObject({ state: 'ambiguous' });
    expectRejected(
      await h.engine.commands.handle(
        command('occurrence.recover.v1', {
          occurrenceId,
          evidenceDetermination: 'failed_deterministic',
          statement: 'again',
        }),
      ),
      'ILLEGAL_TRANSITION',
    );
  });

  test('a launch whose answer is lost, on a runtime without launch evidence, stays unconfirmed; lease expiry sends it to operator recovery, never relaunched', async () => {
    const h = await harness({ runtime: new SimulatedRuntime({ durationMs: 60_000, keepsLaunchEvidence: false }) });
    h.runtime.enqueue('crash-during-launch');
    h.clock.set(at('09:00:00'));
    const tick = await h.engine.tick();
    expect(tick.launches[0]?.result.outcome).toBe('unconfirmed');
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    h.clock.set(at('09:00:10'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    expect(h.runtime.launches).toHaveLength(1);
    h.clock.set(at('09:00:16'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'recovery_required',
      recovery: { evidence: 'dispatch_unconfirmed' },
    });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'ambiguous' });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a run past perRunMinutes times out and its session is told to stop', async () => {
    const h = await harness({ perRunMinutes: 30 });
    h.runtime.enqueue('hang');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:29:59'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    h.clock.set(at('09:30:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'timed_out' });
    expect((await h.read.runs())[0]).toMatchObject({
      state: 'timed_out',
      terminalDisposition: { outcome: 'timed_out' },
    });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'timed_out' });
    expect((await h.read.receipts()).map((r) => (r.outcome as { disposition: string }).disposition)).toEqual([
      'timed_out',
    ]);
  });
});
