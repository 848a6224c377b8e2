import fc from 'fast-check';
import { beforeAll, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import type { TickReport } from '../../src/engine/pass-phases.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { StoreReader } from '../../src/store/store.js';
import { INVARIANTS } from '../../src/testkit/invariants/checks.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { ProbeRuntime } from '../../src/testkit/invariants/probe-runtime.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { propertySeed } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { Barrier, contractAnswer, GatedStore, liveNow, mostLiveAtOnce, type Gate } from './live-run-race.js';

/** CI's races; COVEN_STRESS=1 runs many more (FC_RUNS sets the number). */
const RACES = Number(process.env.FC_RUNS ?? (process.env.COVEN_STRESS === '1' ? 300 : 24));
const ENGINES = 3;
/** Two slots a day, so two engines can each find one of them due. */
const TWO_SLOTS = 'FREQ=DAILY;BYHOUR=9,10';
const DAY = '2026-03-02';

type Pair = 'slot+runNow' | 'slot+slot' | 'runNow+runNow';

/**
 * One race: which pair of claims meet, through which two engines (in which order), whether a third engine passes
 * at the same time, and whether both overlap checks are held until both have read (`forced`: the interleaving
 * that lets a write skew through, every time) or the second claim starts `yields` event-loop turns after the first.
 */
interface Race {
  pair: Pair;
  engines: number[];
  bystander: boolean;
  forced: boolean;
  yields: number;
}

const races: fc.Arbitrary<Race> = fc.record({
  pair: fc.constantFrom<Pair>('slot+runNow', 'slot+slot', 'runNow+runNow'),
  engines: fc.shuffledSubarray([0, 1, 2], { minLength: 2, maxLength: 2 }),
  bystander: fc.boolean(),
  forced: fc.boolean(),
  yields: fc.nat(40),
});

interface RaceFigures {
  race: Race;
  /** The most live occurrences of the automation at once: over every commit, as polled, and at the end. */
  mostLive: { feed: number; polled: number; final: number };
  /** What broke the contract besides that: an answer, a pass error, a slot left undecided, an invariant. */
  problems: string[];
  barrierTimedOut: boolean;
  contended: number;
}

async function feedEnd(reader: StoreReader): Promise<number> {
  const last = (await reader.readFeed()).at(-1);
  return last === undefined ? 0 : last.position + 1;
}

async function ok(engine: Engine, name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
  if (response.outcome === 'rejected') throw new Error(`${name}: ${JSON.stringify(response.error)}`);
}

/** Engines each on its own store (pool, commit queue) over one schema, as engine processes on one database are. */
async function world(url: string, schema: string) {
  const stores: GatedStore[] = [];
  for (let i = 0; i < ENGINES; i++)
    stores.push(new GatedStore(await PostgresStore.open(url, { schema, poolSize: 4, applicationName: `race-${i}` })));
  const clock = new SimulatedClock(`${DAY}T08:00:00.000Z`);
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 3_600_000 });
  const probe = new ProbeRuntime(runtime, () => stores[0]!.read(feedEnd));
  const engines = stores.map((store, i) =>
    createEngine({ store, clock, runtimes: [probe], instanceId: `engine-${i}`, retention: false }),
  );
  const close = async () => {
    for (const engine of engines) await engine.stop();
    for (const store of stores) await store.close();
    await PostgresStore.dropSchema(url, schema);
  };
  return { stores, clock, probe, engines, close };
}

/** The automation's scheduled occurrences, planned but never claimed (the set-up engine passes them over). */
async function planSlots(w: Awaited<ReturnType<typeof world>>, automationId: string, slots: number) {
  w.stores[0]!.gate = { busy: () => true };
  for (const hour of [9, 10].slice(0, slots)) {
    w.clock.set(`${DAY}T${String(hour).padStart(2, '0')}:00:01.000Z`);
    await w.engines[0]!.tick();
  }
  w.stores[0]!.gate = {};
  const occurrences = await w.stores[0]!.read((r) => r.list('occurrence'));
  return occurrences.map((o) => o.id).filter((id) => id.startsWith(`${automationId}-`));
}

type Claim = () => Promise<TickReport | CommandResponse>;

/** The two claims of a race, each held at its overlap check when the race is forced. */
function claims(w: Awaited<ReturnType<typeof world>>, race: Race, automationId: string, planned: string[]) {
  const barrier = new Barrier(2, 3_000);
  const sides: Array<'slot' | 'runNow'> =
    race.pair === 'slot+slot' ? ['slot', 'slot'] : race.pair === 'runNow+runNow' ? ['runNow', 'runNow'] : ['slot', 'runNow'];
  const made: Claim[] = sides.map((side, i) => {
    const engine = w.engines[race.engines[i]!]!;
    const store = w.stores[race.engines[i]!]!;
    if (side === 'slot') {
      if (race.forced)
        store.gate = {
          hold: {
            matches: (o) => o.op === 'lockUnlessBusy' && o.result === true && planned.includes(o.id),
            barrier,
          },
        } satisfies Gate;
      return () => engine.tick();
    }
    const envelope = command('occurrence.runNow.v1', { automationId });
    if (race.forced)
      store.gate = {
        hold: { matches: (o) => o.op === 'get' && o.kind === 'adoption' && o.id === envelope.adoptionKey, barrier },
      };
    return () => engine.commands.handle(envelope);
  });
  return { made, barrier };
}

async function runRace(url: string, n: number, race: Race): Promise<RaceFigures> {
  const w = await world(url, `live_${process.pid}_${n}`);
  try {
    const automationId = `auto-${n}`;
    await ok(w.engines[0]!, 'definition.create.v1', { definition: definition(automationId, 1, 'draft', TWO_SLOTS) });
    await ok(w.engines[0]!, 'definition.revise.v1', { definition: definition(automationId, 2, 'paused', TWO_SLOTS) }, 1);
    await ok(w.engines[0]!, 'definition.activate.v1', { automationId }, 2);
    const slots = race.pair === 'slot+slot' ? 2 : race.pair === 'slot+runNow' ? 1 : 0;
    const planned = await planSlots(w, automationId, slots);
    w.clock.set(`${DAY}T${['08', '09', '10'][slots]}:30:00.000Z`);
    const { made, barrier } = claims(w, race, automationId, planned);

    let racing = true;
    let polled = 0;
    const poller = (async () => {
      while (racing) polled = Math.max(polled, (await w.stores[0]!.read((r) => liveNow(r, automationId))).length);
    })();
    const first = made[0]!();
    for (let i = 0; i < (race.forced ? 0 : race.yields); i++) await new Promise((resolve) => setImmediate(resolve));
    const answers = await Promise.all([
      first,
      made[1]!(),
      ...(race.bystander && !race.forced ? [w.engines[3 - race.engines[0]! - race.engines[1]!]!.tick()] : []),
    ]);
    racing = false;
    await poller;
    for (const store of w.stores) store.gate = {};

    // Two more passes each: a slot whose claim lost is decided the contract's way (skipped, overlap forbidden).
    const reports = answers.filter((a): a is TickReport => 'phaseMs' in a);
    for (let i = 0; i < 2; i++) for (const engine of w.engines) reports.push(await engine.tick());
    const problems = [
      ...answers.filter((a): a is CommandResponse => !('phaseMs' in a)).flatMap((a) => contractAnswer(a) ?? []),
      ...reports.flatMap((r) => r.errors.map((e) => `pass error: ${e.message}`)),
      ...(await undecided(w.stores[0]!, automationId)),
    ];
    const history = await captureHistory(w.stores[0]!, w.probe.log, w.clock.now().toISOString(), []);
    problems.push(...INVARIANTS.flatMap((i) => i.check(history, undefined).map((p) => `${i.id}: ${p}`)));
    const feed: EventEnvelope[] = history.feed;
    const final = (await w.stores[0]!.read((r) => liveNow(r, automationId))).length;
    if (final !== 1) problems.push(`${final} live occurrences at the end, not one`);
    return {
      race,
      mostLive: { feed: mostLiveAtOnce(feed, automationId), polled, final },
      problems,
      barrierTimedOut: race.forced && barrier.timedOut,
      contended: reports.reduce((sum, r) => sum + r.contended, 0),
    };
  } finally {
    await w.close();
  }
}

/** Occurrences of the automation still waiting for a claim, or skipped for anything but overlap. */
async function undecided(store: GatedStore, automationId: string): Promise<string[]> {
  type Occ = { snapshot: { value: string; context: { automationId?: string } }; attributes: { misfireDisposition?: string } };
  const mine = (await store.read((r) => r.list<Occ>('occurrence'))).filter(
    (o) => o.data.snapshot.context.automationId === automationId,
  );
  return mine.flatMap((o) => {
    const state = o.data.snapshot.value;
    if (state === 'planned' || state === 'eligible') return [`occurrence ${o.id} left ${state}`];
    if (state === 'skipped' && o.data.attributes.misfireDisposition !== 'skipped_overlap')
      return [`occurrence ${o.id} skipped as ${String(o.data.attributes.misfireDisposition)}`];
    return [];
  });
}

describePostgres('one live run per automation across engines on one PostgreSQL database', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'live_run');
  });

  test(
    `${RACES} races of every claim pair through ${ENGINES} engines: never two live runs of one automation`,
    async () => {
      const seed = propertySeed('one live run per automation');
      const plan = fc.sample(races, { seed, numRuns: RACES });
      const figures: RaceFigures[] = [];
      for (const [i, race] of plan.entries()) figures.push(await runRace(url, i, race));
      const doubled = figures.filter((f) => Math.max(f.mostLive.feed, f.mostLive.polled, f.mostLive.final) > 1);
      const byPair = (pair: Pair) => {
        const mine = figures.filter((f) => f.race.pair === pair);
        return `${doubled.filter((f) => f.race.pair === pair).length}/${mine.length}`;
      };
      console.log(
        `[one-live-run] seed=${seed} races=${RACES} doubled=${doubled.length} ` +
          `(slot+runNow ${byPair('slot+runNow')}, slot+slot ${byPair('slot+slot')}, runNow+runNow ${byPair('runNow+runNow')}; ` +
          `forced ${doubled.filter((f) => f.race.forced).length}/${figures.filter((f) => f.race.forced).length}) ` +
          `contended=${figures.reduce((s, f) => s + f.contended, 0)} ` +
          `barrierTimeouts=${figures.filter((f) => f.barrierTimedOut).length}`,
      );
      expect(doubled.map((f) => ({ race: f.race, mostLive: f.mostLive }))).toEqual([]);
      expect(figures.flatMap((f) => f.problems.map((p) => `${JSON.stringify(f.race)}: ${p}`))).toEqual([]);
    },
    600_000,
  );
});
