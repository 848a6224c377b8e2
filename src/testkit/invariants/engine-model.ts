import fc from 'fast-check';
import type { CrashPoint } from '../crash-switch.js';
import type { SimulatedBehavior } from '../../runtime/simulated-runtime.js';
import { AUTOMATIONS, type World } from './world.js';

/** fast-check's model is unused: the system's own store is the state, and the invariants are the oracle. */
export type Model = Record<string, never>;

type Step = { describe: string; act: (world: World) => Promise<unknown> };

/** One engine action; after it, every invariant is checked against the whole history. */
class EngineCommand implements fc.AsyncCommand<Model, World> {
  constructor(private readonly step: Step) {}
  check(): boolean {
    return true;
  }
  async run(_model: Model, world: World): Promise<void> {
    await this.step.act(world);
    await world.verify(this.step.describe);
  }
  toString(): string {
    return this.step.describe;
  }
}

const command = (describe: string, act: Step['act']) => new EngineCommand({ describe, act });

async function pickLive(world: World, index: number, states: string[]): Promise<Record<string, unknown> | undefined> {
  const live = await world.store.read(async (r) => {
    const ids = (await r.liveWork('occurrence')).map((x) => x.id);
    const out = [];
    for (const id of ids) {
      const o = await r.get<{ snapshot: { value: string }; attributes: Record<string, unknown> }>('occurrence', id);
      if (o !== undefined && states.includes(o.data.snapshot.value))
        out.push({ id, ...o.data.attributes, state: o.data.snapshot.value });
    }
    return out;
  });
  return live.length === 0 ? undefined : live[index % live.length];
}

async function latestAttempt(
  world: World,
  runId: string,
): Promise<{ attemptNumber: number; state: string } | undefined> {
  return world.store.read(async (r) => {
    const run = await r.get<{ attributes: { attemptIds: string[] } }>('run', runId);
    const id = run?.data.attributes.attemptIds.at(-1);
    const attempt =
      id === undefined
        ? undefined
        : await r.get<{ snapshot: { value: string; context: { attemptNumber: number } } }>('attempt', id);
    return attempt === undefined
      ? undefined
      : { attemptNumber: attempt.data.snapshot.context.attemptNumber, state: attempt.data.snapshot.value };
  });
}

const automation = fc.constantFrom(...AUTOMATIONS);
const BEHAVIORS: SimulatedBehavior[] = [
  'succeed',
  'fail',
  'refuse',
  'unavailable',
  'transient',
  'hang',
  'lost-after-side-effect',
  'crash-during-launch',
  'duplicate-response',
  'out-of-order-response',
];
const CRASH_POINTS: CrashPoint[] = ['plan', 'claim', 'launched', 'dispatch', 'observe'];

/** Defining, revising and moving definitions through their lifecycle (sometimes with a stale revision). */
function definitionCommands(): Array<fc.Arbitrary<fc.AsyncCommand<Model, World>>> {
  return [
    fc
      .tuple(
        automation,
        fc.integer({ min: 1, max: 3 }),
        fc.uniqueArray(fc.integer({ min: 8, max: 20 }), { minLength: 1, maxLength: 4 }),
      )
      .map(([id, attempts, hours]) =>
        command(`define ${id} (maxAttempts ${attempts}, hours ${hours.join(',')})`, (w) =>
          w.define(id, attempts, hours),
        ),
      ),
    fc
      .tuple(
        fc.constantFrom(
          'definition.activate.v1',
          'definition.pause.v1',
          'definition.disable.v1',
          'x-coven-automata.definition.reenable.v1',
          'definition.tombstone.v1',
        ),
        automation,
        fc.boolean(),
      )
      .map(([name, id, stale]) =>
        command(`${name} ${id}${stale ? ' (stale revision)' : ''}`, async (w) => {
          const revision = await w.revision(id);
          if (revision === undefined) return;
          await w.command(
            name,
            { automationId: id },
            { expectedRevision: stale && revision > 1 ? revision - 1 : revision },
          );
        }),
      ),
    fc
      .tuple(automation, fc.integer({ min: 8, max: 20 }))
      .map(([id, hour]) => command(`revise ${id} to ${hour}:00`, (w) => w.revise(id, hour))),
  ];
}

/** Time passing, engine passes, and what the runtime will do next. */
function clockAndRuntimeCommands(): Array<fc.Arbitrary<fc.AsyncCommand<Model, World>>> {
  return [
    fc
      .constantFrom(1, 7, 30, 61, 180, 1440)
      .map((minutes) => command(`advance ${minutes} min`, async (w) => w.clock.advance({ minutes }))),
    fc
      .nat(2)
      .map((engine) =>
        command(`tick engine #${engine} (of however many the world runs)`, (w) => w.tick(engine % w.engines.length)),
      ),
    fc.constant(command('tick every engine at once', (w) => w.tickTogether())),
    fc.constantFrom(...BEHAVIORS).map((b) => command(`runtime will ${b}`, async (w) => w.behave(b))),
  ];
}

/** Operator commands aimed at whatever live occurrence or held run the index picks. */
function operatorCommands(): Array<fc.Arbitrary<fc.AsyncCommand<Model, World>>> {
  return [
    fc.nat(9).map((i) =>
      command(`cancel live occurrence #${i}`, async (w) => {
        const o = await pickLive(w, i, ['planned', 'eligible', 'claimed', 'dispatching', 'running']);
        if (o !== undefined) await w.command('occurrence.cancel.v1', { occurrenceId: o.id, reason: 'invariant suite' });
      }),
    ),
    fc.nat(9).map((i) =>
      command(`operator retry of held run #${i}`, async (w) => {
        const o = await pickLive(w, i, ['claimed', 'running']);
        const runId = o?.activeRunRef as string | undefined;
        if (runId === undefined) return;
        const latest = await latestAttempt(w, runId);
        if (latest !== undefined)
          await w.command('attempt.retry.v1', {
            runId,
            priorAttemptNumber: latest.attemptNumber,
            priorDisposition: latest.state,
          });
      }),
    ),
    fc.tuple(fc.nat(9), fc.constantFrom('failed_deterministic', 'retry_with_new_attempt')).map(([i, determination]) =>
      command(`recover #${i} (${determination})`, async (w) => {
        const o = await pickLive(w, i, ['recovery_required']);
        if (o !== undefined)
          await w.command('occurrence.recover.v1', {
            occurrenceId: o.id,
            evidenceDetermination: determination,
            statement: 'operator looked at it',
          });
      }),
    ),
    fc.tuple(automation, fc.boolean()).map(([id, replay]) =>
      command(`runNow ${id}${replay ? ' (replayed key)' : ''}`, async (w) => {
        const key = replay && w.usedKeys.length > 0 ? w.usedKeys[w.usedKeys.length - 1]! : w.nextKey('runnow');
        await w.command('occurrence.runNow.v1', { automationId: id }, { adoptionKey: key });
      }),
    ),
  ];
}

/** Every action the engine-level model may take, as fast-check command arbitraries. */
export function engineCommands(): Array<fc.Arbitrary<fc.AsyncCommand<Model, World>>> {
  // The order is part of every recorded seed's meaning: new commands go at the end.
  return [
    ...definitionCommands(),
    ...clockAndRuntimeCommands(),
    ...operatorCommands(),
    fc
      .constantFrom(...CRASH_POINTS)
      .map((point) => command(`crash before ${point}, restart`, (w) => w.crashAndRestart(point))),
  ];
}
