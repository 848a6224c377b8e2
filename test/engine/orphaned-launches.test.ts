import { describe, expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { createEngine, Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS } from '../../src/engine/parts.js';
import { CrashSwitch } from '../../src/testkit/crash-switch.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { OWNER_LEASE_KIND, type OwnerLease } from '../../src/domain/owner-lease.js';
import type { LaunchRequest, LaunchResult } from '../../src/runtime/runtime.js';
import { advanceAll } from '../../src/scheduler/pass.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

/** A runtime whose next launch call dies before it reaches the session (the sender's process died mid-call). */
class DyingSender extends SimulatedRuntime {
  dieOnNextLaunch = false;
  override async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    if (this.dieOnNextLaunch) {
      this.dieOnNextLaunch = false;
      throw new Error('the sender died before the launch reached the runtime');
    }
    return super.launch(request, now);
  }
}

/**
 * An engine `engine-dead` whose launch at 09:00 started a session and whose answer was lost: an orphan. Its process
 * died right after that launch (its pass would otherwise ask the runtime at once, in its next phase).
 */
async function deadEngineWithOrphan() {
  const store = new MemoryStore();
  const runtime = new SimulatedRuntime({ durationMs: 60_000 });
  const h = await harness({ store, runtime, instanceId: 'engine-dead' });
  const crashes = new CrashSwitch();
  const dying = new Engine(
    { store, clock: h.clock, runtimes: [runtime], instanceId: 'engine-dead' },
    crashes.wrap(ENGINE_PARTS),
  );
  runtime.enqueue('crash-during-launch');
  h.clock.set(at('09:00:00'));
  expect((await crashes.tickCrashing(dying, 'launched')).launches.map((l) => l.result.outcome)).toEqual([
    'unconfirmed',
  ]);
  return { store, runtime, h };
}

describe('launches whose answer never arrived are decided from runtime evidence', () => {
  test('a session the runtime proves started is bound and observed to its end, never launched again', async () => {
    const h = await harness();
    h.runtime.enqueue('crash-during-launch');
    h.clock.set(at('09:00:00'));
    expect((await h.engine.tick()).launches[0]?.result.outcome).toBe('unconfirmed');
    h.clock.set(at('09:00:01'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'observing' });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a launch the runtime proves never started is sent again at once, under the same attempt and fence', async () => {
    const runtime = new DyingSender({ durationMs: 0 });
    const h = await harness({ runtime });
    runtime.dieOnNextLaunch = true;
    h.clock.set(at('09:00:00'));
    // The launch answer lost in planning, the pass's next phase asks the runtime, which proves it never started.
    const tick = await h.engine.tick();
    expect(tick.launches.map((l) => l.result.outcome)).toEqual(['unconfirmed', 'started']);
    expect(runtime.launches.map((l) => l.sessionKey)).toEqual([`${(await h.read.attempts())[0]!.attemptId}#1~1`]);
    h.clock.set(at('09:00:02'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'succeeded' });
    expect(await h.read.attempts()).toHaveLength(1);
    // The first key stays fenced: the runtime refuses it, so a late sender can never start it.
    expect(await runtime.launchEvidence(`${(await h.read.attempts())[0]!.attemptId}#1`)).toMatchObject({
      evidence: 'never_started',
    });
  });

  test("a restarted engine decides a dead engine's orphan at once, without waiting for its lease", async () => {
    const { store, runtime, h } = await deadEngineWithOrphan();
    // The dead engine's owner lease says it is alive until 09:00:15; its launch is its own until then.
    const other = createEngine({
      store,
      clock: h.clock,
      runtimes: [runtime],
      instanceId: 'engine-new',
      newId: () => 'unused',
    });
    await other.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    h.clock.set(at('09:00:16'));
    await other.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    expect(runtime.launches).toHaveLength(1);
    const leases = await store.read((r) => r.list(OWNER_LEASE_KIND));
    expect(leases.map((l) => l.id).sort()).toEqual(['engine-dead', 'engine-new']);
  });

  test('a lapsed claim whose orphan this pass did not ask about is left for the next question, not sent to recovery', async () => {
    const { store, runtime, h } = await deadEngineWithOrphan();
    const other = createEngine({ store, clock: h.clock, runtimes: [runtime], instanceId: 'engine-new' });
    h.clock.set(at('09:00:16'));
    // The sender died after this engine's question of the pass (none asked here): its claim's lapse decides nothing.
    expect(await advanceAll(other.services, [], new Set())).toEqual([]);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    await other.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    expect(runtime.launches).toHaveLength(1);
  });

  test("an in-process function's session died with its process: the next engine sends it to the operator at once", async () => {
    const store = new MemoryStore();
    const never = () => new Promise<never>(() => undefined);
    const first = new FunctionRuntime('coven-code', never);
    const h = await harness({ store, runtime: first as unknown as SimulatedRuntime, instanceId: 'engine-gone' });
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    await h.engine.stop();
    const next = createEngine({
      store,
      clock: h.clock,
      runtimes: [new FunctionRuntime('coven-code', never)],
      instanceId: 'engine-next',
      newId: () => 'unused',
    });
    h.clock.set(at('09:00:01'));
    await next.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'recovery_required',
      recovery: { evidence: 'runtime_lost' },
    });
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'ambiguous' });
  });

  test("a live engine's session is observed by it alone; another engine takes it over once that engine stops", async () => {
    const store = new MemoryStore();
    const never = () => new Promise<never>(() => undefined);
    const h = await harness({
      store,
      runtime: new FunctionRuntime('coven-code', never) as unknown as SimulatedRuntime,
      instanceId: 'engine-one',
    });
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    // The other engine's runtime has never heard of the session: its "lost" would be no evidence of anything.
    const other = createEngine({
      store,
      clock: h.clock,
      runtimes: [new FunctionRuntime('coven-code', never)],
      instanceId: 'engine-two',
      newId: () => 'unused',
    });
    h.clock.set(at('09:00:01'));
    await other.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    await h.engine.stop();
    h.clock.set(at('09:00:02'));
    await other.tick();
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'recovery_required' });
  });

  test('an idle engine commits once, its scheduler generation, and never renews its lease', async () => {
    const h = await harness();
    for (const time of ['08:10:00', '08:20:00', '08:30:00']) {
      h.clock.set(at(time));
      await h.engine.tick();
    }
    const leases = await h.store.read((r) => r.list<OwnerLease>(OWNER_LEASE_KIND));
    expect(leases.map((l) => [l.version, l.data.generation, l.data.renewedAt])).toEqual([[1, 1, at('08:10:00')]]);
  });
});
