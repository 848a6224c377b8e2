import { describe, expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store, StoreTransaction } from '../../src/store/store.js';
import { DEFINITION_REVISION_KIND } from '../../src/domain/definition-records.js';
import { DefinitionIntegrityError } from '../../src/domain/launch-outcome.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

/** A store that, once switched on, serves every definition revision with one changed byte in its prompt. */
function tamperingStore(): { store: Store; tamper: (on: boolean) => void } {
  const inner = new MemoryStore();
  let on = false;
  const changed = (tx: StoreTransaction): StoreTransaction =>
    new Proxy(tx, {
      get(target, property) {
        if (property === 'get') {
          return async (kind: string, id: string) => {
            const record = await target.get(kind, id);
            if (!on || kind !== DEFINITION_REVISION_KIND || record === undefined) return record;
            const data = record.data as { action: { prompt: string } };
            return {
              ...record,
              data: { ...data, action: { ...data.action, prompt: data.action.prompt.replace('the', 'uhe') } },
            };
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'transact')
        return (body: (tx: StoreTransaction) => Promise<unknown>) => target.transact((tx) => body(changed(tx)));
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as Store;
  return { store, tamper: (value) => (on = value) };
}

describe('a launch verifies the definition revision it executes', () => {
  test('a revision whose bytes no longer match its digest launches nothing, fails closed and quarantines the automation', async () => {
    const { store, tamper } = tamperingStore();
    const h = await harness({ store });
    tamper(true);
    h.clock.set(at('09:00:00'));
    const tick = await h.engine.tick();
    expect(h.runtime.launches).toHaveLength(0);
    const launch = tick.launches[0]!;
    expect(launch.result).toMatchObject({ outcome: 'failed', failureClass: 'launch_refused' });
    expect(launch.error).toBeInstanceOf(DefinitionIntegrityError);
    expect(tick.errors).toContain(launch.error);
    expect(launch.error?.code).toBe('INTERNAL');
    expect(launch.error?.message).toMatch(
      /definition daily revision \d+ failed its integrity check before launch.*nothing was launched/,
    );
    expect((await h.read.attempts())[0]).toMatchObject({ state: 'failed' });
    // An ordinary run is held for the operator, as after any deterministic refusal; nothing runs meanwhile.
    expect((await h.read.occurrences())[0]).toMatchObject({
      state: 'claimed',
      stateReason: 'held for operator retry after launch_refused',
    });
    const health = await h.ok(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result!.health).toMatchObject({
      quarantined: true,
      staleReason: expect.stringMatching(/^quarantined: definition daily revision \d+ failed its integrity check/),
    });
    // Quarantine holds: the next slot is not planned, and nothing launches.
    h.clock.set('2026-03-03T09:00:00.000Z');
    await h.engine.tick();
    expect(h.runtime.launches).toHaveLength(0);
  });

  test('the same store served faithfully launches as usual', async () => {
    const { store } = tamperingStore();
    const h = await harness({ store });
    h.clock.set(at('09:00:00'));
    const tick = await h.engine.tick();
    expect(tick.launches[0]?.error).toBeUndefined();
    expect(h.runtime.launches).toHaveLength(1);
  });
});
