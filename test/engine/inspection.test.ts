import { createInspector } from '@statelyai/inspect';
import { expect, test } from 'vitest';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import { command, definitionBody } from '../support/commands.js';

test('the Stately inspector receives actor, event and snapshot events for every committed transition', async () => {
  const received: Array<{ type: string; name?: string; event?: { type: string }; snapshot?: { value: unknown } }> = [];
  const inspector = createInspector({
    send: (e: unknown) => void received.push(e as never),
    start: () => undefined,
    stop: () => undefined,
  } as never);
  const store = new MemoryStore();
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  const engine = createEngine({
    store,
    clock,
    runtimes: [new SimulatedRuntime({ durationMs: 60_000 })],
    inspect: (e) => inspector.inspect.next?.(e),
  });
  await engine.commands.handle(command('definition.create.v1', { definition: definitionBody('daily') }));
  await engine.commands.handle(
    command(
      'definition.revise.v1',
      { definition: definitionBody('daily', { revision: 2, lifecycleState: 'paused' }) },
      { expectedRevision: 1 },
    ),
  );
  await engine.commands.handle(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 2 }));
  clock.set('2026-03-02T09:00:00.000Z');
  await engine.tick();
  clock.set('2026-03-02T09:02:00.000Z');
  await engine.tick();
  await new Promise((resolve) => setTimeout(resolve, 5)); // the inspector delivers asynchronously

  const feed = (await store.read((r) => r.readFeed<EventEnvelope>()))
    .map((e) => e.data)
    .filter((e) => e.kind.endsWith('.transitioned'));
  const actors = received.filter((e) => e.type === '@xstate.actor').map((e) => e.name);
  for (const entity of ['occurrence', 'run', 'attempt']) expect(actors.some((id) => id?.startsWith(entity))).toBe(true);
  const sent = received
    .filter((e) => e.type === '@xstate.event' && e.event?.type !== 'xstate.init')
    .map((e) => e.event!.type);
  const transitions = feed.filter((e) => e.payload.from !== 'none').map((e) => e.payload.reason);
  expect(sent.sort()).toEqual([...transitions].sort());
  const snapshots = received.filter((e) => e.type === '@xstate.snapshot').map((e) => String(e.snapshot?.value));
  for (const to of feed.map((e) => String(e.payload.to))) expect(snapshots).toContain(to);
});
