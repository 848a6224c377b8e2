import { describe, expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { createEngine, Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS } from '../../src/engine/parts.js';
import { CrashSwitch } from '../../src/testkit/crash-switch.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import type { LaunchEvidence, LaunchRequest, LaunchResult } from '../../src/runtime/runtime.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

/**
 * One runtime several engines share (as engines on one host share its sessions), whose launches can be held at
 * the door: `entered` resolves once a held launch is waiting, `open()` lets it through. `onFence` runs each time
 * the runtime fences a key as never started, before the asking engine hears the answer: there the test lets the
 * fenced sender's answer commit first, the interleaving that stranded run-now requests under load.
 */
class SharedRuntime extends SimulatedRuntime {
  dieOnNextLaunch = false;
  private door: Promise<void> | undefined;
  private openDoor: () => void = () => undefined;
  private enter: () => void = () => undefined;
  entered: Promise<void> = Promise.resolve();
  fencedKeys: string[] = [];
  onFence: () => Promise<void> = async () => undefined;

  /** Holds the next launch until {@link open}. */
  holdNextLaunch(): void {
    this.door = new Promise((resolve) => (this.openDoor = resolve));
    this.entered = new Promise((resolve) => (this.enter = resolve));
  }
  open(): void {
    this.openDoor();
  }
  override async launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    if (this.dieOnNextLaunch) {
      this.dieOnNextLaunch = false;
      throw new Error('the sender died before the launch reached the runtime');
    }
    const door = this.door;
    this.door = undefined;
    if (door !== undefined) {
      this.enter();
      await door;
    }
    return super.launch(request, now);
  }
  override async launchEvidence(sessionKey: string): Promise<LaunchEvidence> {
    const evidence = await super.launchEvidence(sessionKey);
    if (evidence.evidence === 'never_started') {
      this.fencedKeys.push(sessionKey);
      await this.onFence();
    }
    return evidence;
  }
}

function engineOn(h: Awaited<ReturnType<typeof harness<SharedRuntime>>>, instanceId: string): Engine {
  return createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId, newId: () => 'unused' });
}

describe('a launch its live sender is still sending is never decided by another engine', () => {
  test('a run-now sent by an engine that runs no passes (no owner lease) is left to it for a lease term', async () => {
    const h = await harness({ runtime: new SharedRuntime({ durationMs: 60_000 }), instanceId: 'daemon' });
    const cli = engineOn(h, 'cli');
    h.clock.set(at('08:00:00'));
    h.runtime.holdNextLaunch();
    const answer = cli.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
    await h.runtime.entered;
    // Were the daemon to fence the key now, the refused launch's answer could commit before its own requeue.
    h.runtime.onFence = async () => {
      h.runtime.open();
      await answer;
    };
    h.clock.set(at('08:00:01'));
    await h.engine.tick();
    expect(h.runtime.fencedKeys, 'keys fenced while their sender was sending them').toEqual([]);
    h.runtime.open();
    expect((await answer).outcome).not.toBe('rejected');
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a sender without an owner lease that died is decided once a lease term has passed since its send', async () => {
    const h = await harness({ runtime: new SharedRuntime({ durationMs: 60_000 }), instanceId: 'daemon' });
    const cli = engineOn(h, 'cli');
    h.clock.set(at('08:00:00'));
    h.runtime.dieOnNextLaunch = true;
    await cli.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
    await cli.stop();
    h.clock.set(at('08:00:14'));
    expect((await h.engine.tick()).launches).toEqual([]);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    h.clock.set(at('08:00:16'));
    const tick = await h.engine.tick();
    expect(tick.launches.map((l) => l.result.outcome)).toEqual(['started']);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
  });

  test("an orphan re-sent by one engine is that engine's: a third engine leaves the send alone", async () => {
    const h = await harness({ runtime: new SharedRuntime({ durationMs: 60_000 }), instanceId: 'engine-dead' });
    // Its process dies right after the launch whose answer is lost (its pass would ask the runtime in its next phase).
    const crashes = new CrashSwitch();
    const dying = new Engine(
      { store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-dead' },
      crashes.wrap(ENGINE_PARTS),
    );
    h.runtime.dieOnNextLaunch = true;
    h.clock.set(at('09:00:00'));
    expect((await crashes.tickCrashing(dying, 'launched')).launches.map((l) => l.result.outcome)).toEqual([
      'unconfirmed',
    ]);
    await dying.stop();
    await h.engine.stop();
    const first = engineOn(h, 'engine-first');
    const second = engineOn(h, 'engine-second');
    h.runtime.holdNextLaunch();
    h.clock.set(at('09:00:01'));
    const resend = first.tick();
    await h.runtime.entered;
    const fencedBefore = h.runtime.fencedKeys.length;
    h.runtime.onFence = async () => {
      h.runtime.open();
      await resend;
    };
    await second.tick();
    expect(h.runtime.fencedKeys.length - fencedBefore, 'keys fenced while a live engine was sending them').toBe(0);
    h.runtime.open();
    expect((await resend).launches.map((l) => l.result.outcome)).toEqual(['started']);
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
    expect(h.runtime.launches).toHaveLength(1);
  });
});
