// What the scale-out test and bench both set up: definitions due at one instant, and the shared engine clock.
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine } from '../../src/engine/engine.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Store } from '../../src/store/store.js';
import { command, definition } from '../fixtures.js';

/** The slot every due definition has, on the day the engines' shared clock is set to. */
export const SLOT = Date.parse('2026-03-02T10:00:00.000Z');
export const DUE_DAILY_AT_TEN = 'FREQ=DAILY;BYHOUR=10';
export const NEVER_DUE_TODAY = 'FREQ=DAILY;BYHOUR=3';

/** Creates and activates definitions, with a clock before the slot so none is due while they are set up. */
export async function defineAll(store: Store, runtime: Runtime, ids: string[], rrule: string): Promise<void> {
  const setup = createEngine({ store, runtimes: [runtime], clock: new SimulatedClock(new Date(SLOT - 600_000)) });
  for (let i = 0; i < ids.length; i += 64)
    await Promise.all(
      ids.slice(i, i + 64).map(async (id) => {
        await command(setup, 'definition.create.v1', { definition: definition(id, 1, 'draft', rrule) });
        await command(setup, 'definition.revise.v1', { definition: definition(id, 2, 'paused', rrule) }, 1);
        await command(setup, 'definition.activate.v1', { automationId: id }, 2);
      }),
    );
  await setup.stop();
}

/** The engines' clock offset: their shared clock reads just past the slot from now on. */
export const offsetToSlot = (): number => SLOT + 500 - Date.now();
