import { afterEach, expect, test, vi } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine } from '../../src/engine/engine.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { PostgresTransaction } from '../../src/store/postgres/postgres-transaction.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

afterEach(() => {
  vi.restoreAllMocks();
});

// The set-based claim is a write transaction, queued behind every other commit: a pass opens it only when the read
// at its start found something due, or when it planned something itself. Without a claim the work would still be
// taken one occurrence at a time, so only the count of claims shows the gate.
describePostgres('a pass on a shared store claims in batches only when something is due', (socketDir) => {
  test('nothing due: no claim; due at the pass’s start or planned by it: claimed in a batch', async () => {
    const url = await freshDatabase(socketDir, 'claim_gate');
    const store = await PostgresStore.open(url, { schema: 'gate' });
    const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
    const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
    const engine = createEngine({ store, clock, runtimes: [runtime], instanceId: 'engine-0', retention: false });
    const claims = vi.spyOn(PostgresTransaction.prototype, 'lockDueOccurrences');
    try {
      for (const [id, hour] of [
        ['gate-a', 9],
        ['gate-b', 10],
      ] as const) {
        const rule = `FREQ=DAILY;BYHOUR=${hour}`;
        for (const [name, payload, revision] of [
          ['definition.create.v1', { definition: definition(id, 1, 'draft', rule) }, undefined],
          ['definition.revise.v1', { definition: definition(id, 2, 'paused', rule) }, 1],
          ['definition.activate.v1', { automationId: id }, 2],
        ] as const) {
          const response = await engine.commands.handle(command(name, payload, { expectedRevision: revision }));
          expect(response.outcome, JSON.stringify(response.error)).not.toBe('rejected');
        }
      }
      await engine.tick();
      expect(claims).not.toHaveBeenCalled();

      // Planned by this pass: claimed in the same pass.
      clock.set('2026-03-02T09:00:01.000Z');
      expect((await engine.tick()).launched).toBe(1);
      expect(claims).toHaveBeenCalled();
      claims.mockClear();
      await engine.tick();
      expect(claims).not.toHaveBeenCalled();

      // Planned before the pass (here without one, as another engine's pass would): due when the pass begins.
      clock.set('2026-03-02T10:00:01.000Z');
      expect(await planDueSlots(engine.services)).toHaveLength(1);
      const report = await engine.tick();
      expect(report.planned).toBe(0);
      expect(report.launched).toBe(1);
      expect(claims).toHaveBeenCalled();
    } finally {
      await engine.stop();
      await store.close();
    }
  });
});
