import { describe, expect, test } from 'vitest';
import { OutboxState, QuarantineState, RunHoldState } from '../../machines/extension-states.js';
import type { EntityRecord } from '../../src/actors/entity-transition.js';
import { acceptAndDispatch } from '../../src/dispatcher/dispatcher.js';
import { KINDS } from '../../src/domain/records.js';
import { createEngine } from '../../src/engine/engine.js';
import type { OutboxContext } from '../../src/guards/outbox.js';
import { advanceAll } from '../../src/scheduler/pass.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import type { Store } from '../../src/store/store.js';
import { command } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

/** A second engine on the same store: what an upgraded binary opening an old store looks like. */
function reopen(h: Harness) {
  const engine = createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-b' });
  const ok = async (input: unknown) => {
    const r = await engine.commands.handle(input);
    expect(r.outcome, JSON.stringify(r.error)).not.toBe('rejected');
    return r;
  };
  return { engine, ok };
}

async function entity(store: Store, kind: string, id: string) {
  const record = await store.read((r) => r.get<EntityRecord<unknown>>(kind, id));
  expect(record?.data.machineId, `${kind} ${id} is in machine form`).toMatch(/^x-coven-automata\./);
  return record!.data.snapshot;
}

describe('stores written before the outbox, run hold and quarantine had machines', () => {
  test('a pending launch kept as {status: pending} is released once, and its record moves through the outbox machine', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    await planDueSlots(h.engine.services);
    await advanceAll(h.engine.services);
    const occurrenceId = (await h.read.occurrences())[0]!.occurrenceId as string;
    const outboxId = (await h.engine.services.step((step) =>
      acceptAndDispatch(h.engine.services, step, occurrenceId),
    ))!;
    // Rewrite the committed launch as the engine used to store it: its status beside the launch's fields.
    await h.store.transact(async (tx) => {
      const current = (await tx.get<EntityRecord<unknown>>(KINDS.outbox, outboxId))!;
      const c = current.data.snapshot.context as unknown as OutboxContext;
      const legacy = {
        attemptId: c.attemptId,
        occurrenceId: c.occurrenceId,
        runId: c.runId,
        dispatchGeneration: c.dispatchGeneration,
        status: 'pending',
        committedAt: c.committedAt,
      };
      await tx.put(KINDS.outbox, outboxId, legacy, { expectedVersion: current.version });
    });
    const b = reopen(h);
    await b.engine.tick();
    expect(h.runtime.launches).toHaveLength(1);
    const snapshot = await entity(h.store, KINDS.outbox, outboxId);
    expect(snapshot.value).toBe(OutboxState.done);
    expect(snapshot.context).toMatchObject({ attemptId: expect.any(String), resends: 0, sentAt: at('09:00:00') });
    expect(await h.store.read((r) => r.list('pending-launch'))).toEqual([]);
    h.clock.set(at('09:02:00'));
    await b.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a run held as held: true on its occurrence stays held, then accepts an operator retry and succeeds', async () => {
    const h = await harness();
    h.runtime.enqueue('refuse', 'succeed');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const [run] = await h.read.runs();
    const runId = run!.runId as string;
    const occurrenceId = run!.occurrenceId as string;
    expect((await entity(h.store, KINDS.runHold, runId)).value).toBe(RunHoldState.held);
    // The old shape: no run-hold record, the flag on the occurrence's attributes.
    await h.store.transact(async (tx) => {
      const hold = (await tx.get(KINDS.runHold, runId))!;
      await tx.delete(KINDS.runHold, runId, hold.version);
      const occurrence = (await tx.get<EntityRecord<Record<string, unknown>>>(KINDS.occurrence, occurrenceId))!;
      await tx.put(
        KINDS.occurrence,
        occurrenceId,
        { ...occurrence.data, attributes: { ...occurrence.data.attributes, held: true } },
        { expectedVersion: occurrence.version },
      );
    });
    const b = reopen(h);
    h.clock.set(at('09:10:00'));
    await b.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    expect(h.runtime.launches).toHaveLength(0);
    const health = await b.ok(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result!.health).toMatchObject({ staleReason: 'a run is held for an operator retry' });
    const retried = await b.ok(
      command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'failed' }),
    );
    expect(retried.result).toMatchObject({ attemptNumber: 2, status: 'planned' });
    expect((await entity(h.store, KINDS.runHold, runId)).value).toBe(RunHoldState.clear);
    await b.engine.tick();
    h.clock.set(at('09:12:00'));
    await b.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect((await entity(h.store, KINDS.runHold, runId)).value).toBe(RunHoldState.ended);
  });

  test('an automation quarantined as a bare {since, reason} record stays quarantined and can be lifted', async () => {
    const h = await harness({
      retry: { maxAttempts: 2, backoffPolicy: 'none', retryableClasses: ['runtime_unavailable'] },
    });
    h.runtime.enqueue('unavailable', 'unavailable');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    await h.engine.tick();
    expect((await entity(h.store, KINDS.quarantine, 'daily')).value).toBe(QuarantineState.quarantined);
    const since = '2026-03-02T09:00:00.000Z';
    await h.store.transact(async (tx) => {
      const current = (await tx.get(KINDS.quarantine, 'daily'))!;
      await tx.put(KINDS.quarantine, 'daily', { since, reason: 'old reason' }, { expectedVersion: current.version });
    });
    const b = reopen(h);
    const health = await b.ok(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result!.health).toMatchObject({ quarantined: true, staleReason: 'quarantined: old reason' });
    h.clock.set('2026-03-03T09:00:00.000Z');
    expect((await b.engine.tick()).planned).toBe(0);
    const lifted = await b.ok(command('x-coven-automata.definition.unquarantine.v1', { automationId: 'daily' }));
    expect(lifted.result).toEqual({
      automationId: 'daily',
      quarantined: false,
      quarantinedSince: since,
      reason: 'old reason',
    });
    expect((await entity(h.store, KINDS.quarantine, 'daily')).value).toBe(QuarantineState.clear);
    h.clock.set('2026-03-04T09:00:00.000Z');
    expect((await b.engine.tick()).planned).toBe(1);
  });
});
