import { afterEach, describe, expect, test } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { MAX_SLEEP_MS } from '../../src/engine/next-wake.js';
import { OWNER_LEASE_KIND, renewOwnerLease, type OwnerLease } from '../../src/domain/owner-lease.js';
import { StaleGenerationError } from '../../src/domain/scheduler-generation.js';
import { runDoctor } from '../../src/observability/run-doctor.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { ManualTimers } from '../../src/testkit/manual-timers.js';
import { command } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

/** Two handles on one store: one per engine process (a memory store is shared as it is). */
type OpenPair = () => Promise<[Store, Store]>;

/** The daily automation is due at 09:00; `engine-a` runs at 08:00, a second process of it at 08:00:01. */
async function restartedInstance(open: OpenPair, secondId = 'engine-a') {
  const [first, second] = await open();
  const h = await harness({ store: first, instanceId: 'engine-a' });
  const firstPass = await h.engine.tick();
  h.clock.set('2026-03-02T08:00:01.000Z');
  const restarted = createEngine({ store: second, clock: h.clock, runtimes: [h.runtime], instanceId: secondId });
  const secondPass = await restarted.tick();
  return { h, restarted, firstPass, secondPass };
}

const leaseOf = (store: Store, id: string) => store.read((r) => r.get<OwnerLease>(OWNER_LEASE_KIND, id));

function fencingTests(open: OpenPair): void {
  test('a restarted instance of the same id takes the next generation; the old one is refused and commits nothing', async () => {
    const { h, restarted, firstPass, secondPass } = await restartedInstance(open);
    expect([firstPass.generation, secondPass.generation]).toEqual([1, 2]);
    h.clock.set('2026-03-02T09:00:00.000Z');
    const feedBefore = (await h.read.feed()).length;
    const leaseBefore = await leaseOf(h.store, 'engine-a');
    await expect(h.engine.tick()).rejects.toBeInstanceOf(StaleGenerationError);
    await expect(renewOwnerLease(h.engine.services, 'force')).rejects.toBeInstanceOf(StaleGenerationError);
    // The slot was due: a pass that ran would have planned it.
    expect(await h.read.occurrences()).toEqual([]);
    expect((await h.read.feed()).length).toBe(feedBefore);
    expect(await leaseOf(h.store, 'engine-a')).toEqual(leaseBefore);
    expect(leaseBefore?.data.generation).toBe(2);
    const current = await restarted.tick();
    expect([current.generation, current.planned]).toEqual([2, 1]);
  });

  test('engines of different ids never fence each other', async () => {
    const { h, restarted } = await restartedInstance(open, 'engine-b');
    for (const time of ['08:30:00', '09:00:00', '09:30:00']) {
      h.clock.set(`2026-03-02T${time}.000Z`);
      expect((await h.engine.tick()).generation).toBe(1);
      expect((await restarted.tick()).generation).toBe(2);
    }
    expect((await leaseOf(h.store, 'engine-a'))?.data.generation).toBe(1);
    expect((await leaseOf(h.store, 'engine-b'))?.data.generation).toBe(2);
    expect((await h.engine.leadership()).isLeader).toBe(true);
  });

  test('leadership, scheduler.status.v1 and the doctor name the generation that replaced an instance', async () => {
    const { h, restarted } = await restartedInstance(open);
    expect(await h.engine.leadership()).toEqual({
      isLeader: false,
      leaderId: null,
      generation: 1,
      replacedByGeneration: 2,
    });
    expect(await restarted.leadership()).toEqual({ isLeader: true, leaderId: 'engine-a', generation: 2 });
    const status = await h.engine.commands.handle(command('scheduler.status.v1', {}));
    expect(status.result!.currentGeneration).toBe(2);
    const { isLeader, leaderId, replacedByGeneration } = await h.engine.leadership();
    const report = await runDoctor(h.engine, {
      leader: { isLeader, leaderId, replacedByGeneration: replacedByGeneration! },
    });
    const finding = report.findings.find((f) => f.code === 'scheduler.no-leader');
    expect(finding?.observed).toMatch(/generation 2 of this engine id replaced this scheduler/);
    const current = await runDoctor(restarted, { leader: await restarted.leadership() });
    expect(current.findings.map((f) => f.code)).not.toContain('scheduler.no-leader');
  });
}

describe('scheduler generations on a memory store', () => {
  fencingTests(async () => {
    const store = new MemoryStore();
    return [store, store];
  });

  test('two processes of one id starting at the same instant: the compare-and-set admits one', async () => {
    const h = await harness({ instanceId: 'engine-a' });
    const twin = createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-a' });
    const [a, b] = await Promise.allSettled([h.engine.tick(), twin.tick()]);
    expect(a.status).toBe('fulfilled');
    expect(b.status === 'rejected' && b.reason instanceof StaleGenerationError).toBe(true);
    expect((await h.engine.tick()).generation).toBe(1);
  });

  test('a started engine reports each pass with its trigger: startup first, then the wait it chose', async () => {
    const h = await harness({ instanceId: 'engine-a' });
    const timers = new ManualTimers();
    const passes: string[] = [];
    const engine: Engine = createEngine({
      store: h.store,
      clock: h.clock,
      runtimes: [h.runtime],
      instanceId: 'engine-t',
      timers,
    });
    engine.start((report) => passes.push(`${report.trigger}:${report.generation}`));
    try {
      expect(timers.fire(await timers.scheduled(0))).toBe(true);
      const wait = await timers.scheduled(1);
      // The daily slot at 09:00 is an hour away: the engine sleeps its longest wait.
      expect([wait.trigger, wait.delayMs]).toEqual(['wait', MAX_SLEEP_MS]);
      expect(passes).toEqual(['startup:1']);
    } finally {
      await engine.stop();
    }
  });
});

describePostgres('scheduler generations on PostgreSQL (one store per engine process)', (socketDir) => {
  const opened: PostgresStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  fencingTests(async () => {
    const url = await freshDatabase(socketDir, 'generations');
    const pair = [await PostgresStore.open(url), await PostgresStore.open(url)] as const;
    opened.push(...pair);
    return [...pair];
  });
});
