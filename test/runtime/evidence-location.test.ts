import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { createEngine, Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS } from '../../src/engine/parts.js';
import { CrashSwitch } from '../../src/testkit/crash-switch.js';
import { evidenceReadable } from '../../src/runtime/evidence-location.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import type { LaunchRequest, LaunchResult } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { harness } from '../support/engine-harness.js';
import { eventually } from '../support/eventually.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;
const folders: string[] = [];
const engines: Engine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coven-evidence-location-'));
  folders.push(dir);
  return dir;
}

/** A store other engines may hold at once, as PostgreSQL is. */
const sharedStore = () => Object.assign(new MemoryStore(), { sharedByEngines: true });

/** A child-process runtime whose next launch dies in the sender before it answers: the launch stays `sending`. */
class DyingSender extends ChildProcessRuntime {
  dieOnNextLaunch = false;
  override launch(request: LaunchRequest, now: Date): Promise<LaunchResult> {
    if (!this.dieOnNextLaunch) return super.launch(request, now);
    this.dieOnNextLaunch = false;
    return Promise.reject(new Error('the sender died before the launch reached the runtime'));
  }
}

/** A runtime with its sessions in `sessionsDir`, running in the harness definition's cwd beside it. */
function runtimeAt(sessionsDir: string, host: string, command = 'true'): DyingSender {
  mkdirSync(join(dirname(sessionsDir), 'work', 'notes'), { recursive: true });
  return new DyingSender({ runtimeId: 'coven-code', command, sessionsDir, host });
}

describe('evidenceReadable', () => {
  const here = { host: 'a', root: 'dir:/srv/a/sessions#00' };
  const reader = { here, sharedStore: true, ownLaunch: false };
  test('the same root on the same host reads; another root or host does not', () => {
    expect(evidenceReadable(reader, here)).toBe(true);
    expect(evidenceReadable(reader, { ...here, root: 'dir:/srv/b/sessions#01' })).toBe(false);
    expect(evidenceReadable(reader, { ...here, host: 'b' })).toBe(false);
  });
  test('store-resident evidence proves liveness itself: the same root reads from any host', () => {
    const store = { host: 'a', root: 'store:coven@db', anyHost: true };
    expect(evidenceReadable({ ...reader, here: { ...store, host: 'b' } }, store)).toBe(true);
    expect(evidenceReadable({ ...reader, here: { ...store, root: 'store:other@db' } }, store)).toBe(false);
  });
  test('a launch recorded without a location is this runtime’s only on a single-owner store or when sent here', () => {
    expect(evidenceReadable(reader, undefined)).toBe(false);
    expect(evidenceReadable({ ...reader, ownLaunch: true }, undefined)).toBe(true);
    expect(evidenceReadable({ ...reader, sharedStore: false }, undefined)).toBe(true);
    expect(evidenceReadable({ ...reader, here: undefined }, { host: 'x', root: 'y' })).toBe(true);
  });
});

/**
 * Engine `engine-dead` (this host, sessions in `deadDir`) sends a launch and dies before the answer (its launch
 * stays `sending`); it is stopped, its owner lease runs to 09:00:15. Answers the second engine, on `otherDir`
 * as `otherHost`, and the runtimes.
 */
async function deadSenderAndSurvivor(deadDir: string, otherDir: string, otherHost: string) {
  const store = sharedStore();
  const dead = runtimeAt(join(deadDir, 'sessions'), hostname());
  const h = await harness({ store, runtime: dead, instanceId: 'engine-dead' });
  // Its process dies right after the launch (its pass would ask its own runtime in the next phase).
  const crashes = new CrashSwitch();
  const dying = new Engine(
    { store, clock: h.clock, runtimes: [dead], instanceId: 'engine-dead' },
    crashes.wrap(ENGINE_PARTS),
  );
  dead.dieOnNextLaunch = true;
  h.clock.set(at('09:00:00'));
  expect((await crashes.tickCrashing(dying, 'launched')).launches.map((l) => l.result.outcome)).toEqual([
    'unconfirmed',
  ]);
  await dying.stop();
  await h.engine.stop();
  const survivorDir = join(otherDir, 'sessions');
  const survivor = runtimeAt(survivorDir, otherHost);
  const asked = vi.spyOn(survivor, 'launchEvidence');
  const other = createEngine({ store, clock: h.clock, runtimes: [survivor], instanceId: 'engine-b', host: otherHost });
  engines.push(other);
  return { h, other, survivor, survivorDir, asked };
}

describe('a launch is decided only by a runtime that can read its evidence', () => {
  test('a runtime at another location is never asked (no fence there) and the lease sends the launch to recovery', async () => {
    const { h, other, survivor, survivorDir, asked } = await deadSenderAndSurvivor(folder(), folder(), 'b');
    h.clock.set(at('09:00:16'));
    await other.tick();
    await other.tick();
    expect(asked).not.toHaveBeenCalled();
    expect(survivor.launches).toEqual([]);
    expect(readdirSync(survivorDir)).toEqual(['evidence-root']);
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'recovery_required',
      recovery: { evidence: 'dispatch_unconfirmed' },
    });
  });

  test('a runtime sharing the folder and host fences the launch and sends it again at once', async () => {
    const shared = folder();
    const { h, other, survivor, asked } = await deadSenderAndSurvivor(shared, shared, hostname());
    h.clock.set(at('09:00:01'));
    await other.tick();
    expect(asked).toHaveBeenCalledTimes(1);
    expect(survivor.launches).toHaveLength(1);
    await eventually(async () => {
      await other.tick();
      return (await h.read.occurrences())[0]!.state === 'succeeded' ? true : undefined;
    });
  });

  test('a session at another location is not observed (never read as lost); one in the shared folder settles', async () => {
    for (const sameFolder of [false, true]) {
      const store = sharedStore();
      const first = folder();
      const launcher = runtimeAt(join(first, 'sessions'), 'a', 'sleep 1');
      const h = await harness({ store, runtime: launcher, instanceId: 'engine-gone' });
      h.clock.set(at('09:00:00'));
      await h.engine.tick();
      expect((await h.read.attempts())[0]).toMatchObject({ state: 'observing' });
      await h.engine.stop();
      const next = runtimeAt(join(sameFolder ? first : folder(), 'sessions'), sameFolder ? 'a' : 'b');
      const observed = vi.spyOn(next, 'observe');
      const other = createEngine({ store, clock: h.clock, runtimes: [next], instanceId: 'engine-b', host: 'b' });
      engines.push(other);
      h.clock.set(at('09:00:16'));
      if (!sameFolder) {
        await other.tick();
        expect(observed).not.toHaveBeenCalled();
        expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
        continue;
      }
      await eventually(async () => {
        await other.tick();
        return (await h.read.occurrences())[0]!.state === 'succeeded' ? true : undefined;
      });
    }
  });
});
