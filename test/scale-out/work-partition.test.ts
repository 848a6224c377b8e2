import { expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import type { TickReport } from '../../src/engine/pass-phases.js';
import { renewOwnerLease } from '../../src/domain/owner-lease.js';
import { PLAN_STEAL_AFTER_MS } from '../../src/scheduler/planning.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

const AUTOMATIONS = 40;
const RULE = 'FREQ=DAILY;BYHOUR=9,10,11';
const ids = Array.from({ length: AUTOMATIONS }, (_, i) => `split-${String(i).padStart(2, '0')}`);

async function ok(engine: Engine, name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
  if (response.outcome === 'rejected') throw new Error(`${name}: ${JSON.stringify(response.error)}`);
}

/** Both engines' passes at once, as two processes run them; the reports of each round. */
async function together(engines: Engine[]): Promise<TickReport[]> {
  return Promise.all(engines.map((e) => e.tick()));
}

describePostgres('engines sharing one PostgreSQL split the work instead of racing for it', (socketDir) => {
  test('each due automation is planned, claimed and launched by one engine; none lost; a stopped engine’s share moves, a silent one’s is taken after a grace', async () => {
    const url = await freshDatabase(socketDir, 'partition');
    const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
    const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
    const stores = [
      await PostgresStore.open(url, { schema: 'split', poolSize: 4 }),
      await PostgresStore.open(url, { schema: 'split', poolSize: 4 }),
    ];
    const engines = stores.map((store, i) =>
      createEngine({ store, clock, runtimes: [runtime], instanceId: `engine-${i}`, retention: false }),
    );
    try {
      for (const id of ids) {
        await ok(engines[0]!, 'definition.create.v1', { definition: definition(id, 1, 'draft', RULE) });
        await ok(engines[0]!, 'definition.revise.v1', { definition: definition(id, 2, 'paused', RULE) }, 1);
        await ok(engines[0]!, 'definition.activate.v1', { automationId: id }, 2);
      }
      clock.set('2026-03-02T09:00:01.000Z');
      // Both engines live: each has its owner lease (a started engine renews it on a timer, idle or not).
      for (const engine of engines) await renewOwnerLease(engine.services, 'force');
      const rounds: TickReport[][] = [];
      for (let i = 0; i < 3; i++) rounds.push(await together(engines));
      const planned = engines.map((_, e) => rounds.reduce((n, round) => n + round[e]!.planned, 0));
      const launched = engines.map((_, e) => rounds.reduce((n, round) => n + round[e]!.launched, 0));
      const contended = rounds.flat().reduce((n, r) => n + r.contended + r.passedOver, 0);
      console.log(
        `lost ${rounds
          .flat()
          .map((r) => `${r.contended}+${r.passedOver}`)
          .join(' ')}`,
      );
      const errors = rounds.flat().flatMap((r) => r.errors.map((e) => e.message));
      console.log(`planned ${planned.join('/')}, launched ${launched.join('/')}, lost races ${contended}`);
      expect(errors).toEqual([]);
      expect(planned[0]! + planned[1]!).toBe(AUTOMATIONS);
      expect(launched[0]! + launched[1]!).toBe(AUTOMATIONS);
      // Each did part of the work, and they seldom raced for the same piece of it.
      expect(Math.min(...planned)).toBeGreaterThan(AUTOMATIONS / 5);
      // A set-based claim (SKIP LOCKED) may still take an occurrence of the other's share now and then; without
      // the split the two engines lost 80 races here.
      expect(contended).toBeLessThanOrEqual(AUTOMATIONS / 10);

      // One engine stops: the other takes its share of the next slot at once (same host, its process is gone).
      await engines[1]!.stop();
      clock.set('2026-03-02T10:00:01.000Z');
      let plannedAlone = 0;
      for (let i = 0; i < 3; i++) plannedAlone += (await engines[0]!.tick()).planned;
      expect(plannedAlone).toBe(AUTOMATIONS);

      // A live engine that does not plan its share (hung, or slow): its slots wait PLAN_STEAL_AFTER_MS, then the
      // other engine plans them too.
      const silent = createEngine({ store: stores[1]!, clock, runtimes: [runtime], instanceId: 'engine-silent' });
      engines.push(silent);
      clock.set('2026-03-02T11:00:01.000Z');
      for (const engine of [engines[0]!, silent]) await renewOwnerLease(engine.services, 'force');
      const own = (await engines[0]!.tick()).planned;
      expect(own).toBeGreaterThan(0);
      expect(own).toBeLessThan(AUTOMATIONS);
      clock.set(new Date(Date.parse('2026-03-02T11:00:01.000Z') + PLAN_STEAL_AFTER_MS).toISOString());
      expect(own + (await engines[0]!.tick()).planned).toBe(AUTOMATIONS);
    } finally {
      for (const engine of engines) await engine.stop();
      for (const store of stores) await store.close();
    }
  }, 120_000);
});
