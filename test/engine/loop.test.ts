import { afterEach, describe, expect, test, vi } from 'vitest';
import { nextWakeAt, MAX_SLEEP_MS, OBSERVE_INTERVAL_MS } from '../../src/engine/next-wake.js';
import { COMMIT_WAKE_MS, type TickReport } from '../../src/engine/engine.js';
import { harness } from '../support/engine-harness.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { CommitListener, Store } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

describe('the engine loop', () => {
  test('sleeps until the next due slot, observes running sessions every second, never longer than the cap', async () => {
    const h = await harness();
    h.clock.set(at('08:59:00'));
    const wake = async () => (await h.store.read((r) => nextWakeAt(h.engine.services, r))).toISOString();
    expect(await wake()).toBe(at('09:00:00'));
    h.runtime.enqueue('hang');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    expect(await wake()).toBe(new Date(Date.parse(at('09:00:00')) + OBSERVE_INTERVAL_MS).toISOString());
    await h.ok(command('definition.pause.v1', { automationId: 'daily' }, { expectedRevision: 3 }));
    const paused = await harness({ activate: false });
    paused.clock.set(at('08:00:00'));
    expect(await paused.store.read((r) => nextWakeAt(paused.engine.services, r))).toEqual(
      new Date(Date.parse(at('08:00:00')) + MAX_SLEEP_MS),
    );
  });

  test('a due slot still unplanned (its planning failed or was passed over) is looked at again within a second', async () => {
    const h = await harness();
    // The 09:00 slot is due and no pass has planned it: the loop must not sleep to the next slot, capped at a minute.
    h.clock.set(at('09:00:00'));
    const wake = await h.store.read((r) => nextWakeAt(h.engine.services, r));
    expect(wake.getTime() - Date.parse(at('09:00:00'))).toBeLessThanOrEqual(OBSERVE_INTERVAL_MS);
    await h.engine.tick();
    // Planned now: nothing else is due until the run is observed.
    expect(await h.store.read((r) => nextWakeAt(h.engine.services, r))).toEqual(
      new Date(Date.parse(at('09:00:00')) + OBSERVE_INTERVAL_MS),
    );
  });

  test('start runs a pass at once and after outside commits; stop ends it', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    const passes: TickReport[] = [];
    let resolveFirst!: () => void;
    const first = new Promise<void>((resolve) => (resolveFirst = resolve));
    h.engine.start((report) => {
      passes.push(report);
      resolveFirst();
    });
    await first;
    expect(passes[0]).toMatchObject({ planned: 1, launched: 1 });
    await h.engine.stop();
    const count = passes.length;
    await h.ok(command('definition.pause.v1', { automationId: 'daily' }, { expectedRevision: 3 }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(passes.length).toBe(count);
  });

  describe('with timers the test controls', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    test('a burst of outside commits wakes one pass, COMMIT_WAKE_MS after the first of them', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const h = await harness();
      h.clock.set(at('08:00:00'));
      let passes = 0;
      h.engine.start(() => void passes++);
      await vi.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      for (let i = 0; i < 5; i++)
        await h.ok(
          command('definition.create.v1', {
            definition: definitionBody(`burst-${i}`, { revision: 1, lifecycleState: 'draft' }),
          }),
        );
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS - 1);
      expect(passes).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(passes).toBe(2);
      // Nothing is due and nothing committed since: the loop sleeps.
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS * 5);
      expect(passes).toBe(2);
      await h.ok(
        command('definition.create.v1', {
          definition: definitionBody('burst-late', { revision: 1, lifecycleState: 'draft' }),
        }),
      );
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
      expect(passes).toBe(3);
      await h.engine.stop();
    });

    test('a command committed as a pass reads its next wake-up wakes another pass within COMMIT_WAKE_MS', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const inner = new MemoryStore();
      let afterRead: (() => Promise<unknown>) | undefined;
      // The read right after a pass is its next wake-up's: the command commits once that read is done, before the
      // pass ends, so the wake-up it computed knows nothing of it.
      const store: Store = {
        transact: (body) => inner.transact(body),
        read: async (body) => {
          const result = await inner.read(body);
          const hook = afterRead;
          afterRead = undefined;
          await hook?.();
          return result;
        },
        onCommit: (listener) => inner.onCommit(listener),
        close: () => inner.close(),
      };
      const h = await harness({ store });
      h.clock.set(at('08:00:00'));
      let passes = 0;
      const late = definitionBody('late', { revision: 1, lifecycleState: 'draft' });
      h.engine.start(() => {
        if (++passes === 1) afterRead = () => h.ok(command('definition.create.v1', { definition: late }));
      });
      await vi.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      expect(await h.store.read((r) => r.get('definition', 'late'))).toBeDefined();
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
      expect(passes).toBe(2);
      await h.engine.stop();
    });

    test.each([
      [true, 'only at the observation interval'],
      [false, 'within COMMIT_WAKE_MS'],
    ])("another engine's commit (routine: %s), heard in a pass or between passes, wakes one %s", async (routine) => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const inner = new MemoryStore();
      const listeners: CommitListener[] = [];
      let afterRead: (() => void) | undefined;
      // Stands in for the notifier: another engine's commit is heard during the read that ends the first pass.
      const store: Store = {
        transact: (body) => inner.transact(body),
        read: async (body) => {
          const result = await inner.read(body);
          afterRead?.();
          afterRead = undefined;
          return result;
        },
        onCommit: (listener) => {
          listeners.push(listener);
          return inner.onCommit(listener);
        },
        close: () => inner.close(),
      };
      const h = await harness({ store });
      h.clock.set(at('08:00:00'));
      let passes = 0;
      const heard = () => listeners.forEach((listener) => listener('outside', routine));
      h.engine.start(() => {
        if (++passes === 1) afterRead = heard;
      });
      await vi.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
      expect(passes).toBe(routine ? 1 : 2);
      // Between passes: the same.
      const before = passes;
      heard();
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
      expect(passes).toBe(routine ? before : before + 1);
      await vi.advanceTimersByTimeAsync(OBSERVE_INTERVAL_MS);
      expect(passes).toBe(before + 1);
      await h.engine.stop();
    });

    /** An engine started with nothing due for an hour, its first pass run; counts the passes after it. */
    async function startedIdle() {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const h = await harness();
      h.clock.set(at('08:00:00'));
      const counted = { passes: 0 };
      h.engine.start(() => void counted.passes++);
      await vi.advanceTimersByTimeAsync(0);
      expect(counted.passes).toBe(1);
      return { h, counted };
    }

    test('a manual run the engine launches itself wakes a pass only at the observation interval', async () => {
      const { h, counted } = await startedIdle();
      h.runtime.enqueue('hang');
      // Its command commits the launch `sending` and the engine sends it; the answer leaves the session running.
      await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
      expect((await h.read.occurrences())[0]).toMatchObject({ state: 'running' });
      await vi.advanceTimersByTimeAsync(OBSERVE_INTERVAL_MS - 1);
      expect(counted.passes).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(counted.passes).toBe(2);
      await h.engine.stop();
    });

    test('a launch answered with a retry to plan wakes a pass within COMMIT_WAKE_MS', async () => {
      const { h, counted } = await startedIdle();
      h.runtime.enqueue('unavailable');
      await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
      // A retryable refusal plans the occurrence again: that answer is no routine commit.
      expect((await h.read.occurrences())[0]).toMatchObject({ state: 'planned' });
      await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
      expect(counted.passes).toBe(2);
      await h.engine.stop();
    });
  });
});
