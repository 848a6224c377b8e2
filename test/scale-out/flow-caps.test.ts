import fc from 'fast-check';
import { beforeAll, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { LIMITS_EXTENSION, type FlowLimits } from '../../src/domain/flow-limits.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord } from '../../src/domain/records.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { Store } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';
import { propertyParameters } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { Barrier, GatedStore, type Operation } from './live-run-race.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { advanceOccurrence } from '../../src/scheduler/occurrences.js';
import { StoreConflictError } from '../../src/store/store.js';

/** CI's scenarios; COVEN_STRESS=1 runs many more (FC_RUNS sets the number). */
const RUNS = process.env.COVEN_STRESS === '1' ? 60 : 6;
const TAGS = ['reports', 'mail'] as const;

interface Scenario {
  engines: number;
  runtimeCap: number;
  tagCaps: Record<(typeof TAGS)[number], number>;
  automations: Array<{ tags: Array<(typeof TAGS)[number]>; priority: number }>;
  runMinutes: number;
}

const scenarios: fc.Arbitrary<Scenario> = fc.record({
  engines: fc.integer({ min: 2, max: 4 }),
  runtimeCap: fc.integer({ min: 1, max: 4 }),
  tagCaps: fc.record({ reports: fc.integer({ min: 1, max: 2 }), mail: fc.integer({ min: 1, max: 3 }) }),
  automations: fc.array(
    fc.record({
      tags: fc.subarray([...TAGS]),
      priority: fc.integer({ min: -2, max: 2 }),
    }),
    { minLength: 3, maxLength: 9 },
  ),
  runMinutes: fc.integer({ min: 1, max: 3 }),
});

/** How many live occurrences each limit holds in one committed state, read in one snapshot. */
async function heldByLimit(store: Store, scenario: Scenario): Promise<Record<string, number>> {
  const occurrences = (await store.read((r) =>
    r.list<OccurrenceRecord['data']>(KINDS.occurrence),
  )) as OccurrenceRecord[];
  const live = occurrences.filter((o) => OCCURRENCE_LIVE.has(stateOf(o)));
  const held: Record<string, number> = { runtime: live.length, reports: 0, mail: 0 };
  for (const o of live) {
    const index = Number(o.data.attributes.automationId.slice('capped-'.length));
    for (const tag of scenario.automations[index]!.tags) held[tag]! += 1;
  }
  return held;
}

async function openWorld(url: string, scenario: Scenario, schema: string, gated = false) {
  const stores: Store[] = [];
  for (let i = 0; i < scenario.engines; i++) {
    const store = await PostgresStore.open(url, { schema, poolSize: 4, applicationName: `caps-${i}` });
    stores.push(gated ? new GatedStore(store) : store);
  }
  const clock = new SimulatedClock('2026-12-07T08:59:00.000Z');
  const runtime = new SimulatedRuntime({ durationMs: scenario.runMinutes * 60_000 });
  const engines = stores.map((store, i) =>
    createEngine({ store, clock, runtimes: [runtime], instanceId: `engine-${i}`, retention: false }),
  );
  const close = async () => {
    for (const engine of engines) await engine.stop();
    for (const store of stores) await store.close();
  };
  return { stores, clock, engines, close };
}

async function ok(engine: Engine, name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
  if (response.outcome === 'rejected') throw new Error(`${name}: ${JSON.stringify(response.error)}`);
}

/** Every automation of the scenario, daily at 09:00, with its tags and priority; then the store-wide caps. */
async function define(engine: Engine, scenario: Scenario, limits: FlowLimits): Promise<void> {
  for (const [index, a] of scenario.automations.entries()) {
    const limitsExtension = { priority: a.priority, ...(a.tags.length === 0 ? {} : { tags: a.tags }) };
    const extra = { extensions: { [LIMITS_EXTENSION]: limitsExtension } };
    const id = `capped-${index}`;
    await ok(engine, 'definition.create.v1', { definition: definitionBody(id, { extra }) });
    await ok(
      engine,
      'definition.revise.v1',
      { definition: definitionBody(id, { revision: 2, lifecycleState: 'paused', extra }) },
      1,
    );
    await ok(engine, 'definition.activate.v1', { automationId: id }, 2);
  }
  await ok(engine, 'x-coven-automata.limits.set.v1', { limits });
}

const limitsOf = (s: Scenario): FlowLimits => ({
  runtimes: { 'coven-code': { inFlight: s.runtimeCap } },
  tags: { reports: { inFlight: s.tagCaps.reports }, mail: { inFlight: s.tagCaps.mail } },
});

describePostgres('caps across engines on one PostgreSQL (x-coven-automata.limits.v1)', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'flow_caps');
  });

  test('engines racing every pass never hold more than a cap in flight, and all the work runs', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(scenarios, async (scenario) => {
        const w = await openWorld(url, scenario, `caps_${runs++}`);
        try {
          await define(w.engines[0]!, scenario, limitsOf(scenario));
          const caps: Record<string, number> = { runtime: scenario.runtimeCap, ...scenario.tagCaps };
          let most: Record<string, number> = { runtime: 0, reports: 0, mail: 0 };
          let polling = true;
          const sample = async () => {
            const held = await heldByLimit(w.stores[0]!, scenario);
            for (const key of Object.keys(caps)) {
              expect(held[key], `${key} in flight`).toBeLessThanOrEqual(caps[key]!);
              most = { ...most, [key]: Math.max(most[key]!, held[key]!) };
            }
          };
          const poller = (async () => {
            while (polling) await sample();
          })();
          // Enough minutes for every automation to run one after another, each pass raced by every engine.
          const minutes = scenario.automations.length * (scenario.runMinutes + 1) + 2;
          try {
            for (let minute = 0; minute < minutes; minute++) {
              w.clock.advance({ minutes: 1 });
              await Promise.all(w.engines.map((engine) => engine.tick()));
            }
          } finally {
            polling = false;
            await poller;
          }
          await sample();
          const states = (await w.stores[0]!.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))).map((o) =>
            stateOf(o as OccurrenceRecord),
          );
          expect(states).toEqual(scenario.automations.map(() => 'succeeded'));
          expect(most.runtime).toBeGreaterThan(0);
        } finally {
          await w.close();
        }
      }),
      propertyParameters('caps across engines', RUNS),
    );
  }, 600_000);

  test('two engines that both read a cap with room left for one: one claims, the other conflicts and waits', async () => {
    const scenario: Scenario = {
      engines: 2,
      runtimeCap: 5,
      tagCaps: { reports: 1, mail: 1 },
      automations: [
        { tags: ['reports'], priority: 0 },
        { tags: ['reports'], priority: 0 },
      ],
      runMinutes: 5,
    };
    const w = await openWorld(url, scenario, 'caps_forced', true);
    try {
      await define(w.engines[0]!, scenario, limitsOf(scenario));
      w.clock.set('2026-12-07T09:00:01.000Z');
      await planDueSlots(w.engines[0]!.services);
      const planned = (await w.stores[0]!.read((r) => r.list(KINDS.occurrence))).map((o) => o.id).sort();
      expect(planned).toHaveLength(2);
      // Each engine claims one of the two; both are held once they read the tag's gate, so both read it empty.
      const barrier = new Barrier(2, 10_000);
      const readsGate = (o: Operation) => o.op === 'get' && o.kind === 'flow-gate' && o.id === 'tag:reports';
      for (const store of w.stores as GatedStore[]) store.gate = { hold: { matches: readsGate, barrier } };
      const claims = w.engines.map((engine, i) =>
        engine.services
          .step((step) => advanceOccurrence(engine.services, step, planned[i]!, []))
          .then(
            () => 'committed',
            (error: unknown) => (error instanceof StoreConflictError ? 'conflict' : String(error)),
          ),
      );
      const answers = (await Promise.all(claims)).sort();
      expect(barrier.timedOut, 'both claims read the gate at once').toBe(false);
      expect(answers).toEqual(['committed', 'conflict']);
      expect((await heldByLimit(w.stores[0]!, scenario)).reports).toBe(1);
      // The loser, run again, finds the cap full and waits eligible; it runs once the first run has ended.
      await Promise.all(w.engines.map((engine) => engine.tick()));
      const states = async () =>
        (await w.stores[0]!.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence)))
          .map((o) => stateOf(o as OccurrenceRecord))
          .sort();
      expect(await states()).toEqual(['eligible', 'running']);
      for (let minute = 0; minute < 12; minute++) {
        w.clock.advance({ minutes: 1 });
        await Promise.all(w.engines.map((engine) => engine.tick()));
        expect((await heldByLimit(w.stores[0]!, scenario)).reports).toBeLessThanOrEqual(1);
      }
      expect(await states()).toEqual(['succeeded', 'succeeded']);
    } finally {
      await w.close();
    }
  }, 60_000);
});
