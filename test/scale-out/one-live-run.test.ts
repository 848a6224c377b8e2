import pg from 'pg';
import { beforeAll, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import type { TickReport } from '../../src/engine/pass-phases.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { INVARIANTS } from '../../src/testkit/invariants/checks.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { ProbeRuntime } from '../../src/testkit/invariants/probe-runtime.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { eventually } from '../support/eventually.js';
import { propertySeed } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import {
  at,
  Barrier,
  contractAnswer,
  day,
  GatedStore,
  liveNow,
  mine,
  mostLiveAtOnce,
  racePlan,
  summary,
  TWO_SLOTS,
  undecided,
  waiting,
  type Operation,
  type Race,
  type RaceFigures,
} from './live-run-race.js';

/** CI's races; COVEN_STRESS=1 runs many more (FC_RUNS sets the number). */
const RACES = Number(process.env.FC_RUNS ?? (process.env.COVEN_STRESS === '1' ? 300 : 18));
const ENGINES = 3;
/**
 * Where the log ends, counting every committed entry: a launch's adoption must be below it. Read from the table,
 * not the feed: the feed is served below the visibility horizon, which may lag a commit already durable.
 */
async function committedLogEnd(db: pg.Pool, schema: string): Promise<number> {
  const { rows } = await db.query<{ end: number }>(
    `SELECT COALESCE(MAX(position) + 1, 0)::float8 AS end FROM "${schema}".log`,
  );
  return rows[0]!.end;
}

/** Engines each on its own store (pool, commit queue) over one schema, as engine processes on one database are. */
async function world(url: string, schema: string) {
  const stores: GatedStore[] = [];
  for (let i = 0; i < ENGINES; i++)
    stores.push(new GatedStore(await PostgresStore.open(url, { schema, poolSize: 4, applicationName: `race-${i}` })));
  const clock = new SimulatedClock(`${day(0)}T08:00:00.000Z`);
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
  const db = new pg.Pool({ connectionString: url, max: 2 });
  const probe = new ProbeRuntime(runtime, () => committedLogEnd(db, schema));
  const engines = stores.map((store, i) =>
    createEngine({ store, clock, runtimes: [probe], instanceId: `engine-${i}`, retention: false }),
  );
  const close = async () => {
    for (const engine of engines) await engine.stop();
    for (const store of stores) await store.close();
    await db.end();
  };
  return { stores, clock, probe, engines, close };
}
type World = Awaited<ReturnType<typeof world>>;

async function ok(engine: Engine, name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
  if (response.outcome === 'rejected') throw new Error(`${name}: ${JSON.stringify(response.error)}`);
}

/**
 * The automation's scheduled occurrences, planned but never claimed: the set-up engine plans them without the rest
 * of a pass (a pass would claim a slot in its planning commit).
 */
async function planSlots(w: World, n: number, automationId: string, slots: number): Promise<string[]> {
  for (const hour of ['09', '10'].slice(0, slots)) {
    w.clock.set(at(n, `${hour}:00:01`));
    await planDueSlots(w.engines[0]!.services);
  }
  return (await mine(w.stores[0]!, automationId)).map((o) => o.id);
}

type Claim = () => Promise<TickReport | CommandResponse>;
/** Which race this is (its day) and the hour its claims are made in. */
interface RaceRun {
  n: number;
  hour: string;
}

/**
 * The two claims of a race, each held at its overlap check when the race is forced; when it goes `through`, only
 * the first is held, after its snapshot (a slot's pass reads or locks the slot), until the second's occurrence has
 * run and settled.
 */
function claims(w: World, race: Race, automationId: string, planned: string[]) {
  const barrier = new Barrier(2, race.through ? 30_000 : 3_000);
  const sides = race.pair.split('+') as Array<'slot' | 'runNow'>;
  const made: Claim[] = sides.map((side, i) => {
    const engine = w.engines[race.engines[i]!]!;
    const store = w.stores[race.engines[i]!]!;
    const held = race.through ? i === 0 : race.forced;
    if (side === 'slot') {
      const matches = (o: Operation) =>
        planned.includes(o.id) &&
        ((o.op === 'lockUnlessBusy' && o.result === true) ||
          (race.through && o.op === 'get' && o.kind === 'occurrence'));
      if (held) store.gate = { hold: { matches, barrier } };
      return () => engine.tick();
    }
    const envelope = command('occurrence.runNow.v1', { automationId });
    const matches = (o: Operation) => o.op === 'get' && o.kind === 'adoption' && o.id === envelope.adoptionKey;
    if (held) store.gate = { hold: { matches, barrier } };
    return () => engine.commands.handle(envelope);
  });
  return { made, barrier };
}

/**
 * A race that goes through: the first claim starts and is held; the second claims, and its occurrence runs and is
 * settled by its engine's next pass; then the first goes on. Answers both claims' answers and that pass's report.
 */
async function through(w: World, r: Race, run: RaceRun, { made, barrier }: ReturnType<typeof claims>) {
  const gate = w.stores[r.engines[0]!]!.gate;
  let firstDone = false;
  const first = made[0]!().finally(() => (firstDone = true));
  await eventually(async () => (gate.hold === undefined || firstDone ? true : undefined), 30_000);
  const second = await made[1]!();
  w.clock.set(at(run.n, `${run.hour}:31:30`));
  const settling = await w.engines[r.engines[1]!]!.tick();
  await barrier.arrive();
  return [await first, second, settling];
}

/** Starts both claims (and a bystander's pass), polling the automation's live occurrences until all answered. */
async function race(w: World, r: Race, automationId: string, claimed: ReturnType<typeof claims>, run: RaceRun) {
  const { made } = claimed;
  let racing = true;
  let polled = 0;
  const poller = (async () => {
    while (racing) polled = Math.max(polled, (await w.stores[0]!.read((x) => liveNow(x, automationId))).length);
  })();
  let answers: Array<TickReport | CommandResponse>;
  if (r.through) answers = await through(w, r, run, claimed);
  else {
    const first = made[0]!();
    for (let i = 0; i < (r.forced ? 0 : r.yields); i++) await new Promise((resolve) => setImmediate(resolve));
    const bystander = w.engines[3 - r.engines[0]! - r.engines[1]!]!;
    answers = await Promise.all([first, made[1]!(), ...(r.bystander && !r.forced ? [bystander.tick()] : [])]);
  }
  racing = false;
  await poller;
  for (const store of w.stores) store.gate = {};
  return { answers, polled };
}

async function runRace(w: World, n: number, r: Race): Promise<RaceFigures> {
  const automationId = `auto-${String(n).padStart(4, '0')}`;
  w.clock.set(at(n, '08:00:00'));
  await ok(w.engines[0]!, 'definition.create.v1', { definition: definition(automationId, 1, 'draft', TWO_SLOTS) });
  await ok(w.engines[0]!, 'definition.revise.v1', { definition: definition(automationId, 2, 'paused', TWO_SLOTS) }, 1);
  await ok(w.engines[0]!, 'definition.activate.v1', { automationId }, 2);
  const slots = r.pair === 'slot+slot' ? 2 : r.pair === 'slot+runNow' ? 1 : 0;
  const planned = await planSlots(w, n, automationId, slots);
  const hour = ['08', '09', '10'][slots]!;
  w.clock.set(at(n, `${hour}:30:00`));
  const claimed = claims(w, r, automationId, planned);
  const { answers, polled } = await race(w, r, automationId, claimed, { n, hour });

  // Passes until no slot waits: one whose claim lost is decided the contract's way (skipped, overlap forbidden).
  const reports = answers.filter((a): a is TickReport => 'phaseMs' in a);
  for (let i = 0; i < ENGINES && (await waiting(w.stores[0]!, automationId)).length > 0; i++)
    reports.push(await w.engines[i]!.tick());
  const final = (await w.stores[0]!.read((x) => liveNow(x, automationId))).length;
  const problems = [
    ...answers.filter((a): a is CommandResponse => !('phaseMs' in a)).flatMap((a) => contractAnswer(a) ?? []),
    ...reports.flatMap((x) => x.errors.map((e) => `pass error: ${e.message}`)),
    ...(await undecided(w.stores[0]!, automationId)),
    ...(final === 1 ? [] : [`${final} live occurrences after the race, not one`]),
  ];
  // The winner's run ends and the automation is paused: the next race starts from a quiet store.
  w.clock.set(at(n, '11:00:00'));
  for (let i = 0; i < 2 && (await w.stores[0]!.read((x) => liveNow(x, automationId))).length > 0; i++)
    await w.engines[0]!.tick();
  await ok(w.engines[0]!, 'definition.pause.v1', { automationId }, 3);
  return {
    race: r,
    mostLive: { polled, final },
    problems,
    barrierTimedOut: (r.forced || r.through) && claimed.barrier.timedOut,
    contended: reports.reduce((sum, x) => sum + x.contended, 0),
  };
}

/** The final history's invariants, and each automation's most live occurrences at once over every commit. */
async function finalHistory(w: World, figures: RaceFigures[]): Promise<string[]> {
  const history = await captureHistory(w.stores[0]!, w.probe.log, w.clock.now().toISOString(), []);
  figures.forEach((f, n) => (f.mostLive.feed = mostLiveAtOnce(history.feed, `auto-${String(n).padStart(4, '0')}`)));
  return INVARIANTS.flatMap((i) => i.check(history, undefined).map((p) => `${i.id}: ${p}`));
}

describePostgres('one live run per automation across engines on one PostgreSQL database', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'live_run');
  });

  test(`${RACES} races of every claim pair through ${ENGINES} engines: never two live runs of one automation`, async () => {
    const seed = propertySeed('one live run per automation');
    const plan = racePlan(seed, RACES);
    const w = await world(url, 'races');
    const figures: RaceFigures[] = [];
    let invariants: string[];
    try {
      for (const [n, r] of plan.entries()) figures.push(await runRace(w, n, r));
      invariants = await finalHistory(w, figures);
    } finally {
      await w.close();
    }
    const doubled = figures.filter((f) => Math.max(f.mostLive.feed ?? 0, f.mostLive.polled, f.mostLive.final) > 1);
    console.log(summary(seed, figures, doubled));
    expect(doubled.map((f) => ({ race: f.race, mostLive: f.mostLive }))).toEqual([]);
    expect(figures.flatMap((f) => f.problems.map((p) => `${JSON.stringify(f.race)}: ${p}`))).toEqual([]);
    expect(invariants, 'the final history holds every invariant').toEqual([]);
  }, 600_000);
});
