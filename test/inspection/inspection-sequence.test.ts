import { createInspector } from '@statelyai/inspect';
import { afterEach, expect, test } from 'vitest';
import { harness, type Harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { InspectionFeed } from '../../src/domain/inspection-feed.js';
import type { InspectionSink } from '../../src/domain/inspection.js';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { committedStates, expectMirrorsHistory, type WireMessage } from './history.js';

const feeds: InspectionFeed[] = [];
afterEach(async () => {
  await Promise.all(feeds.splice(0).map((f) => f.stop()));
});

/** The offline adapter: Stately's own createInspector, collecting its wire messages in delivery order. */
function offlineInspector(): { sink: InspectionSink; messages: WireMessage[] } {
  const messages: WireMessage[] = [];
  const sink: InspectionSink = createInspector({ send: (e) => void messages.push(e as unknown as WireMessage) });
  return { sink, messages };
}

function follow(h: Harness, sink: InspectionSink, after?: number): InspectionFeed {
  const feed = new InspectionFeed(h.store, sink, after === undefined ? {} : { after }).start();
  feeds.push(feed);
  return feed;
}

const last = (messages: WireMessage[], sessionId: string) =>
  messages.filter((m) => m.sessionId === sessionId && m.type === '@xstate.snapshot').at(-1)?.snapshot?.value;

/** A slot runs and settles, a running one is cancelled, a refused one retried, a lost one recovered. */
async function scriptedScenario(h: Harness, feed: InspectionFeed, messages: WireMessage[]) {
  h.runtime.enqueue('succeed', 'hang', 'refuse', 'succeed', 'lost-after-side-effect', 'succeed');
  h.clock.set('2026-03-02T09:00:00.000Z');
  await h.engine.tick();
  h.clock.set('2026-03-02T09:02:00.000Z');
  await h.engine.tick();

  h.clock.set('2026-03-03T09:00:00.000Z');
  await h.engine.tick();
  const hanging = (await h.read.occurrences()).find((o) => o.state === 'running')!.occurrenceId as string;
  const cancel = await h.engine.commands.handle(command('occurrence.cancel.v1', { occurrenceId: hanging }));
  expect(cancel.error?.code).toBe('CANCEL_PENDING');
  h.clock.set('2026-03-03T09:01:00.000Z');
  await h.engine.tick();

  h.clock.set('2026-03-04T09:00:00.000Z');
  await h.engine.tick();
  const held = (await h.read.runs()).find((r) => r.state === 'running')!.runId as string;
  await h.ok(command('attempt.retry.v1', { runId: held, priorAttemptNumber: 1, priorDisposition: 'failed' }));
  await feed.caughtUp();
  // The operator's retry is shown when it commits, not on the entity's next engine transition.
  const retried = (await h.read.attempts()).find((a) => a.runId === held && a.attemptNumber === 2)!;
  expect(last(messages, `attempt/${retried.attemptId as string}`)).toBe(retried.state);
  const heldOccurrence = (await h.read.occurrences()).find((o) => o.state !== 'succeeded' && o.state !== 'cancelled')!;
  expect(last(messages, `occurrence/${heldOccurrence.occurrenceId as string}`)).toBe(heldOccurrence.state);
  await h.engine.tick();
  h.clock.set('2026-03-04T09:02:00.000Z');
  await h.engine.tick();

  h.clock.set('2026-03-05T09:00:00.000Z');
  await h.engine.tick();
  h.clock.set('2026-03-05T09:02:00.000Z');
  await h.engine.tick();
  const lost = (await h.read.occurrences()).find((o) => o.state === 'recovery_required')!.occurrenceId as string;
  await h.ok(
    command('occurrence.recover.v1', {
      occurrenceId: lost,
      evidenceDetermination: 'retry_with_new_attempt',
      statement: 'nothing was written',
    }),
  );
  await feed.caughtUp();
  // Before the next pass: the recovery (and the launch the command made at once) are already shown.
  const recovered = (await h.read.occurrences()).find((o) => o.occurrenceId === lost)!;
  expect(last(messages, `occurrence/${lost}`)).toBe(recovered.state);
  expect(
    messages.some((m) => m.sessionId === `occurrence/${lost}` && m.event?.type === 'operator_recovery_attempt'),
  ).toBe(true);
  h.clock.set('2026-03-05T09:07:00.000Z');
  await h.engine.tick();
  return { hanging, held, lost };
}

test('every entity of the four machines appears once, from its initial state, then every committed transition in commit order', async () => {
  const h = await harness({ retention: false });
  const { sink, messages } = offlineInspector();
  const feed = follow(h, sink);
  const { hanging, lost } = await scriptedScenario(h, feed, messages);
  await feed.caughtUp();

  const history = await committedStates(h.store);
  expectMirrorsHistory(messages, history);
  expect(feed.stats()).toMatchObject({ joinedLate: 0, compacted: 0, mismatches: 0 });
  // The definition is an actor too, its machine drawn from the config; its work hangs under it.
  const definition = messages.find((m) => m.type === '@xstate.actor' && m.sessionId === 'definition/daily')!;
  expect(JSON.parse(definition.definition!)).toMatchObject({ id: 'definition.v1', initial: 'draft' });
  expect(messages.find((m) => m.type === '@xstate.actor' && m.sessionId === `occurrence/${lost}`)!.parentId).toBe(
    'definition/daily',
  );
  const events = (id: string) =>
    messages.filter((m) => m.type === '@xstate.event' && m.sessionId === id).map((m) => m.event!.type);
  expect(events('definition/daily')).toEqual(['xstate.init', 'definition_revise_committed', 'definition_activated']);
  expect(events(`occurrence/${hanging}`).at(-1)).toBe('cancel_acknowledged');
  expect(events(`occurrence/${lost}`)).toContain('operator_recovery_attempt');
  const operator = messages.filter((m) => m.type === '@xstate.event' && m.event!.actor === 'command_handler');
  expect(operator.map((m) => m.event!.type)).toEqual(
    expect.arrayContaining(['operator_retry', 'operator_recovery_attempt']),
  );
  const positions = messages.filter((m) => m.type === '@xstate.event').map((m) => m.event!.position!);
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
});

test("another engine's commits are replayed as they commit, in the feed's order", async () => {
  const h = await harness({ retention: false });
  const { sink, messages } = offlineInspector();
  const feed = follow(h, sink);
  const other = createEngine({ store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-b' });
  h.runtime.enqueue('succeed');
  await other.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
  await feed.caughtUp();
  const [occurrence] = await h.read.occurrences();
  expect(last(messages, `occurrence/${occurrence!.occurrenceId as string}`)).toBe(occurrence!.state);
  h.clock.set('2026-03-02T08:05:00.000Z');
  await h.engine.tick();
  await feed.caughtUp();
  expectMirrorsHistory(messages, await committedStates(h.store));
});

test('a mirror started mid-history says which entities joined late, and registers each once', async () => {
  const h = await harness({ retention: false });
  h.runtime.enqueue('succeed');
  h.clock.set('2026-03-02T09:00:00.000Z');
  await h.engine.tick();
  const head = (await h.store.read((r) => r.readFeed({ after: -1, limit: 100_000 }))).at(-1)!.position;
  const { sink, messages } = offlineInspector();
  const feed = follow(h, sink, head);
  h.clock.set('2026-03-02T09:02:00.000Z');
  await h.engine.tick();
  await feed.caughtUp();
  const actors = messages.filter((m) => m.type === '@xstate.actor').map((m) => m.sessionId);
  expect(actors.length).toBeGreaterThan(0);
  expect(new Set(actors).size).toBe(actors.length);
  expect(feed.stats().joinedLate).toBe(actors.length);
});

test('the engine feeds its inspector from the committed changefeed until it stops', async () => {
  const h = await harness({ retention: false });
  const { sink, messages } = offlineInspector();
  const engine = createEngine({
    store: h.store,
    clock: h.clock,
    runtimes: [new SimulatedRuntime({ durationMs: 60_000 })],
    instanceId: 'engine-inspected',
    inspector: sink,
  });
  h.clock.set('2026-03-02T09:00:00.000Z');
  await engine.tick();
  h.clock.set('2026-03-02T09:02:00.000Z');
  await engine.tick();
  await engine.inspected();
  expectMirrorsHistory(messages, await committedStates(h.store));
  await engine.stop();
  const count = messages.length;
  await h.ok(command('definition.pause.v1', { automationId: 'daily' }, { expectedRevision: 3 }));
  await engine.inspected();
  expect(messages).toHaveLength(count);
});
