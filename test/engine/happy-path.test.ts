import { describe, expect, test } from 'vitest';
import { verifyIntegrity } from '../../src/contract/digest.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { harness, transitions } from '../support/engine-harness.js';
import { command } from '../support/commands.js';

describe('a daily definition runs at its slot', () => {
  test('plans, claims, dispatches, observes and settles with a verified receipt; every object validates', async () => {
    const h = await harness();
    h.clock.set('2026-03-02T08:59:59.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    h.clock.set('2026-03-02T09:00:00.000Z');
    const first = await h.engine.tick();
    expect(first).toMatchObject({ planned: 1, launched: 1, settled: 0 });
    h.clock.advance({ minutes: 2 });
    expect((await h.engine.tick()).settled).toBe(1);

    const [occurrence] = await h.read.occurrences();
    expect(occurrence).toMatchObject({
      state: 'succeeded',
      occurrenceKey: 'daily@2026-03-02T09:00:00.000Z',
      automationRevision: 3,
      fence: { generation: 1 },
    });
    expect(transitions(await h.read.stream('occurrence', occurrence!.occurrenceId as string))).toEqual([
      'none->planned',
      'planned->eligible',
      'eligible->claimed',
      'claimed->dispatching',
      'dispatching->running',
      'running->succeeded',
    ]);
    const [run] = await h.read.runs();
    expect(run).toMatchObject({
      state: 'succeeded',
      attemptCount: 1,
      receiptRef: `receipt-attempt-${String(run!.runId)}-1`,
    });
    const [attempt] = await h.read.attempts();
    expect(attempt).toMatchObject({
      state: 'succeeded',
      attemptNumber: 1,
      dispatchFence: { occurrenceFenceGeneration: 1, dispatchGeneration: 1 },
    });
    const [receipt] = await h.read.receipts();
    expect(verifyIntegrity(receipt!).valid).toBe(true);
    expect(receipt).toMatchObject({
      outcome: { disposition: 'succeeded' },
      automationRevision: 3,
      occurrenceFenceGeneration: 1,
    });

    for (const o of await h.read.occurrences())
      expect(validateAgainst('automation-occurrence.schema.json', o).problems).toEqual([]);
    for (const r of await h.read.runs()) expect(validateAgainst('automation-run.schema.json', r).problems).toEqual([]);
    for (const a of await h.read.attempts())
      expect(validateAgainst('automation-attempt.schema.json', a).problems).toEqual([]);
    for (const r of await h.read.receipts())
      expect(validateAgainst('automation-receipt.schema.json', r).problems).toEqual([]);
    for (const e of await h.read.feed()) expect(validateAgainst('event-envelope.schema.json', e).problems).toEqual([]);
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a pass with no slot due opens no transaction for the definition; the slot is planned the moment it is due', async () => {
    // Beyond the engine's one commit of its scheduler generation, on its first pass.
    const h = await harness({ start: '2026-03-02T08:00:00.000Z' });
    const transact = h.engine.services.store.transact.bind(h.engine.services.store);
    let transactions = 0;
    h.engine.services.store.transact = (body) => {
      transactions++;
      return transact(body);
    };
    for (const at of ['2026-03-02T08:00:00.000Z', '2026-03-02T08:30:00.000Z', '2026-03-02T08:59:59.999Z']) {
      h.clock.set(at);
      expect((await h.engine.tick()).planned).toBe(0);
    }
    expect(transactions).toBe(1);
    h.clock.set('2026-03-02T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(1);
    expect(transactions).toBeGreaterThan(0);
  });

  test('the next day plans the next slot; nothing before activation is ever planned', async () => {
    const h = await harness({ start: '2026-03-02T10:00:00.000Z' });
    expect((await h.engine.tick()).planned).toBe(0);
    h.clock.set('2026-03-03T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(1);
    h.clock.set('2026-03-03T09:00:30.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    expect((await h.read.occurrences()).map((o) => o.scheduledFor)).toEqual(['2026-03-03T09:00:00.000Z']);
  });

  test('missed slots collapse into the latest, recorded as a misfire, never backfilled', async () => {
    const h = await harness();
    h.clock.set('2026-03-05T09:30:00.000Z');
    await h.engine.tick();
    const occurrences = await h.read.occurrences();
    expect(occurrences.map((o) => [o.scheduledFor, o.misfireDisposition])).toEqual([
      ['2026-03-05T09:00:00.000Z', 'collapsed_to_latest'],
    ]);
    const misfire = (await h.read.stream('occurrence', occurrences[0]!.occurrenceId as string)).find(
      (e) => e.kind === 'occurrence.misfire_recorded',
    );
    expect(misfire?.payload).toEqual({
      disposition: 'collapsed_to_latest',
      collapsedSlots: ['2026-03-02T09:00:00.000Z', '2026-03-03T09:00:00.000Z', '2026-03-04T09:00:00.000Z'],
    });
  });

  test('health and history report the run', async () => {
    const h = await harness();
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    h.clock.advance({ minutes: 2 });
    await h.engine.tick();
    const health = await h.ok(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result!.health).toMatchObject({
      lifecycleState: 'active',
      nextDueAt: '2026-03-03T09:00:00.000Z',
      lastSuccessAt: '2026-03-02T09:02:00.000Z',
      consecutiveFailures: 0,
      quarantined: false,
      staleReason: null,
    });
    const history = await h.ok(command('run.history.v1', { automationId: 'daily' }));
    expect(history.result).toMatchObject({
      runs: [{ state: 'succeeded', attempts: [{ state: 'succeeded' }] }],
      cursor: { hasMore: false },
    });
  });
});
