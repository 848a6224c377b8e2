// The changefeed orders one automation's live occurrences as the database did, across engines on one PostgreSQL.
// Feed positions follow transaction ids, taken when a transaction starts; a claim decided on an older snapshot and
// committed after another occurrence of its automation went live and ended would land before both in the feed
// (two live at once, although the database never held two). Each test holds one engine's transaction after it took
// its snapshot and transaction id, lets the other engine run a whole occurrence, then lets the first commit.
import { afterEach, beforeEach, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { readEventFeed } from '../../src/changefeed/stored-event.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { eventually } from '../support/eventually.js';
import { at, Barrier, GatedStore, mostLiveAtOnce, TWO_SLOTS, type Operation } from './live-run-race.js';

const AUTOMATION = 'auto-feed-order';

interface Pair {
  stores: GatedStore[];
  engines: Engine[];
  clock: SimulatedClock;
}

/** Two engines, each with its own store on one schema, and the automation active with its 09:00 slot planned. */
async function twoEngines(url: string): Promise<Pair> {
  const stores = await Promise.all(
    ['a', 'b'].map(
      async (name) => new GatedStore(await PostgresStore.open(url, { poolSize: 4, applicationName: name })),
    ),
  );
  const clock = new SimulatedClock(at(0, '08:00:00'));
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
  const engines = stores.map((store, i) =>
    createEngine({ store, clock, runtimes: [runtime], instanceId: `engine-${i}`, retention: false }),
  );
  const ok = async (name: string, payload: Record<string, unknown>, expectedRevision?: number) => {
    const response = await engines[1]!.commands.handle(command(name, payload, { expectedRevision }));
    expect(response.outcome, JSON.stringify(response.error)).not.toBe('rejected');
  };
  await ok('definition.create.v1', { definition: definition(AUTOMATION, 1, 'draft', TWO_SLOTS) });
  await ok('definition.revise.v1', { definition: definition(AUTOMATION, 2, 'paused', TWO_SLOTS) }, 1);
  await ok('definition.activate.v1', { automationId: AUTOMATION }, 2);
  clock.set(at(0, '09:00:01'));
  await planDueSlots(engines[1]!.services);
  clock.set(at(0, '09:30:00'));
  return { stores, engines, clock };
}

/** Holds `store`'s next transaction after the first operation `matches`; resolves once it is held there. */
function holdAt(store: GatedStore, matches: (operation: Operation) => boolean) {
  const barrier = new Barrier(2, 30_000);
  let held = false;
  store.gate = {
    hold: {
      matches: (operation) => (held = matches(operation)),
      barrier,
    },
  };
  return { reached: () => eventually(async () => (held ? true : undefined)), release: () => barrier.arrive(), barrier };
}

/**
 * The automation's occurrence transitions in feed order, [position, occurrence, to], after checking that the feed
 * shows one of its occurrences live at a time.
 */
async function transitionsShowingOneLive(pair: Pair): Promise<Array<[number, string, string]>> {
  const feed = await pair.stores[0]!.read((reader) => readEventFeed(reader));
  const transitions = feed
    .filter((e) => e.data.kind === 'occurrence.transitioned' && e.data.automationId === AUTOMATION)
    .map((e): [number, string, string] => [e.position, e.data.occurrenceId!, String(e.data.payload.to)]);
  const events = feed.map((e) => e.data);
  expect(mostLiveAtOnce(events, AUTOMATION), JSON.stringify(transitions)).toBe(1);
  return transitions;
}

/** Where in the feed `occurrence` first reached `state`. */
const positionOf = (feed: Array<[number, string, string]>, occurrence: string, state: string) =>
  feed.find(([, id, to]) => id === occurrence && to === state)?.[0];

describePostgres('changefeed order across engines', (socketDir) => {
  let pair: Pair;
  beforeEach(async () => {
    pair = await twoEngines(await freshDatabase(socketDir, 'feed_order'));
  });
  afterEach(async () => {
    for (const engine of pair.engines) await engine.stop();
    for (const store of pair.stores) await store.close();
  });

  test('a run-now decided before the slot went live and settled is claimed after the slot ended', async () => {
    const [engineA, engineB] = pair.engines;
    const envelope = command('occurrence.runNow.v1', { automationId: AUTOMATION });
    // The run-now's prefetch has taken its snapshot and transaction id when it reads its adoption record.
    const hold = holdAt(
      pair.stores[0]!,
      (o) => o.op === 'get' && o.kind === 'adoption' && o.id === envelope.adoptionKey,
    );
    const runNow = engineA!.commands.handle(envelope);
    await hold.reached();
    expect((await engineB!.tick()).launched).toBe(1);
    pair.clock.set(at(0, '09:31:30'));
    expect((await engineB!.tick()).settled).toBe(1);
    await hold.release();
    const response = await runNow;
    expect(hold.barrier.timedOut).toBe(false);
    expect(response.result, JSON.stringify(response.error)).toMatchObject({ status: 'claimed' });
    const feed = await transitionsShowingOneLive(pair);
    const slot = feed[0]![1];
    const manual = (response.result as { occurrenceId: string }).occurrenceId;
    expect(positionOf(feed, manual, 'claimed')).toBeGreaterThan(positionOf(feed, slot, 'succeeded')!);
  });

  test.each([
    ['one at a time', undefined],
    ['in a batch', true],
  ])("a pass's claim (%s) decided before a run-now went live and settled is made after its end", async (_, batch) => {
    const [engineA, engineB] = pair.engines;
    pair.stores[1]!.sharedByEngines = batch;
    // The pass has taken its snapshot and transaction id when it first reads the due slot (a batch, once it has
    // locked it).
    const hold = holdAt(pair.stores[1]!, (o) => o.op === 'get' && o.kind === 'occurrence');
    const pass = engineB!.tick();
    await hold.reached();
    const response = await engineA!.commands.handle(command('occurrence.runNow.v1', { automationId: AUTOMATION }));
    expect(response.result, JSON.stringify(response.error)).toMatchObject({ status: 'claimed' });
    const manual = (response.result as { occurrenceId: string }).occurrenceId;
    pair.clock.set(at(0, '09:31:30'));
    await engineA!.tick();
    expect(
      await pair.stores[0]!.read((r) => r.get<{ snapshot: { value: string } }>('occurrence', manual)),
    ).toMatchObject({ data: { snapshot: { value: 'succeeded' } } });
    await hold.release();
    await pass;
    expect(hold.barrier.timedOut).toBe(false);
    await engineB!.tick();
    const feed = await transitionsShowingOneLive(pair);
    const slot = feed.find(([, id]) => id !== manual)![1];
    expect(positionOf(feed, slot, 'claimed')).toBeGreaterThan(positionOf(feed, manual, 'succeeded')!);
  });
});
