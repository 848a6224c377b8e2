import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, beforeAll, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { INVARIANTS } from '../../src/testkit/invariants/checks.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { definition } from '../../bench/fixtures.js';
import { LedgerRuntime } from '../../bench/scale-out/ledger-runtime.js';
import { command } from '../support/commands.js';
import { eventually } from '../support/eventually.js';
import { propertySeed } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import {
  at,
  contractAnswer,
  GatedStore,
  liveNow,
  mostLiveAtOnce,
  racePlan,
  races,
  summary,
  TWO_SLOTS,
  undecided,
  waiting,
  type Race,
  type RaceFigures,
} from './live-run-race.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** CI's races; COVEN_STRESS=1 runs many more (FC_RUNS sets the number). */
const RACES = Number(process.env.FC_RUNS ?? (process.env.COVEN_STRESS === '1' ? 150 : 6));
const SCHEMA = 'coven';

type Answer = { id: number; response?: CommandResponse; errors?: string[]; contended?: number; failed?: string };

/** An engine process and how to ask it something (one JSON line each way). */
class EngineProcess {
  private buffered = '';
  private next = 0;
  private readonly waiting = new Map<number, (answer: Answer) => void>();

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString('utf8');
      let newline;
      while ((newline = this.buffered.indexOf('\n')) >= 0) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        if (!line.startsWith('{')) continue;
        const answer = JSON.parse(line) as Answer;
        this.waiting.get(answer.id)?.(answer);
        this.waiting.delete(answer.id);
      }
    });
  }

  ask(request: { op: 'tick' | 'runNow'; now: string; envelope?: unknown }): Promise<Answer> {
    const id = ++this.next;
    const answered = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    this.child.stdin!.write(`${JSON.stringify({ id, ...request })}\n`);
    return answered;
  }
}

const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

async function spawnEngine(url: string, label: string): Promise<EngineProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/scale-out/live-run-engine.ts'], {
    cwd: root,
    env: { ...process.env, COVEN_STORE: url, COVEN_STORE_SCHEMA: SCHEMA, COVEN_ENGINE_LABEL: label },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`engine ${label} exited ${child.exitCode}: ${out}`);
    return out.includes('ready\n') ? true : undefined;
  }, 60_000);
  return new EngineProcess(child);
}

/** The set-up engine in this process: defines each race's automation and plans its slots without claiming them. */
async function setUp(url: string) {
  const store = new GatedStore(await PostgresStore.open(url, { schema: SCHEMA, applicationName: 'coven setup' }));
  const runtime = new LedgerRuntime(url, 'setup', SCHEMA);
  const clock = new SimulatedClock(at(0, '08:00:00'));
  const engine = createEngine({ store, clock, runtimes: [runtime], instanceId: 'setup', retention: false });
  const close = async () => {
    await engine.stop();
    await store.close();
    await runtime.close();
  };
  return { store, clock, engine, close };
}
type SetUp = Awaited<ReturnType<typeof setUp>>;

async function ok(engine: Engine, name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
  if (response.outcome === 'rejected') throw new Error(`${name}: ${JSON.stringify(response.error)}`);
}

async function prepare(s: SetUp, n: number, automationId: string, slots: number): Promise<void> {
  s.clock.set(at(n, '08:00:00'));
  await ok(s.engine, 'definition.create.v1', { definition: definition(automationId, 1, 'draft', TWO_SLOTS) });
  await ok(s.engine, 'definition.revise.v1', { definition: definition(automationId, 2, 'paused', TWO_SLOTS) }, 1);
  await ok(s.engine, 'definition.activate.v1', { automationId }, 2);
  // Planned, never claimed: planning alone, without the rest of a pass (which claims a slot in its planning commit).
  for (const hour of ['09', '10'].slice(0, slots)) {
    s.clock.set(at(n, `${hour}:00:01`));
    await planDueSlots(s.engine.services);
  }
}

/** One race between two engine processes (and a third's pass, when the race has a bystander). */
async function runRace(s: SetUp, engines: EngineProcess[], n: number, r: Race): Promise<RaceFigures> {
  const automationId = `proc-${String(n).padStart(4, '0')}`;
  const slots = r.pair === 'slot+slot' ? 2 : r.pair === 'slot+runNow' ? 1 : 0;
  await prepare(s, n, automationId, slots);
  const now = at(n, `${['08', '09', '10'][slots]}:30:00`);
  const sides = r.pair.split('+');
  let racing = true;
  let polled = 0;
  const poller = (async () => {
    while (racing) polled = Math.max(polled, (await s.store.read((x) => liveNow(x, automationId))).length);
  })();
  const asks = sides.map((side, i) => () => {
    const engine = engines[r.engines[i]!]!;
    return side === 'slot'
      ? engine.ask({ op: 'tick', now })
      : engine.ask({ op: 'runNow', now, envelope: command('occurrence.runNow.v1', { automationId }) });
  });
  const first = asks[0]!();
  for (let i = 0; i < r.yields % 4; i++) await new Promise((done) => setImmediate(done));
  const bystander = engines[3 - r.engines[0]! - r.engines[1]!]!;
  const answers = await Promise.all([first, asks[1]!(), ...(r.bystander ? [bystander.ask({ op: 'tick', now })] : [])]);
  racing = false;
  await poller;
  for (let i = 0; i < engines.length && (await waiting(s.store, automationId)).length > 0; i++)
    answers.push(await engines[i]!.ask({ op: 'tick', now }));
  const final = (await s.store.read((x) => liveNow(x, automationId))).length;
  const problems = [
    ...answers.flatMap((a) => (a.failed === undefined ? [] : [`engine failed: ${a.failed}`])),
    ...answers.flatMap((a) => (a.response === undefined ? [] : (contractAnswer(a.response) ?? []))),
    ...answers.flatMap((a) => (a.errors ?? []).map((e) => `pass error: ${e}`)),
    ...(await undecided(s.store, automationId)),
  ];
  // Ledger sessions end at once: a pass settles the winner; the automation is paused for the next race.
  for (let i = 0; i < 2 && (await s.store.read((x) => liveNow(x, automationId))).length > 0; i++)
    await engines[0]!.ask({ op: 'tick', now: at(n, '11:00:00') });
  s.clock.set(at(n, '11:00:00'));
  await ok(s.engine, 'definition.pause.v1', { automationId }, 3);
  const contended = answers.reduce((sum, a) => sum + (a.contended ?? 0), 0);
  return { race: r, mostLive: { polled, final }, problems, barrierTimedOut: false, contended };
}

/** The final history's invariants (the ledger standing in for the runtime's log), and every feed replay. */
async function finalHistory(url: string, s: SetUp, figures: RaceFigures[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const rows = (
    await client.query<{ session_key: string; attempt_id: string; at: Date; feed_end: number }>(
      'SELECT session_key, attempt_id, at, feed_end::float8 AS feed_end FROM launch_ledger WHERE NOT fenced',
    )
  ).rows;
  await client.end();
  const launches = rows.map((row) => ({
    sessionKey: row.session_key,
    attemptId: row.attempt_id,
    at: row.at.toISOString(),
    sessionId: row.session_key,
    feedEnd: row.feed_end,
  }));
  const exits = new Map(launches.map((l) => [l.sessionKey, { outcome: 'succeeded' as const, cancelled: false }]));
  const runtime = { launches, cancels: [], exits, lost: new Set<string>() };
  const history = await captureHistory(s.store, runtime, new Date().toISOString(), []);
  figures.forEach((f, n) => (f.mostLive.feed = mostLiveAtOnce(history.feed, `proc-${String(n).padStart(4, '0')}`)));
  return INVARIANTS.flatMap((i) => i.check(history, undefined).map((p) => `${i.id}: ${p}`));
}

describePostgres('one live run per automation across engine processes on one PostgreSQL database', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'live_run_processes');
    await LedgerRuntime.prepare(url);
  });

  test(`${RACES} races of every claim pair through 3 engine processes: never two live runs of one automation`, async () => {
    const seed = propertySeed('one live run per automation (processes)');
    // Processes race as they happen to: no claim is held at its overlap check.
    const plan = racePlan(
      seed,
      RACES,
      races.map((r) => ({ ...r, forced: false, through: false })),
    );
    const s = await setUp(url);
    const engines = await Promise.all([0, 1, 2].map((i) => spawnEngine(url, `proc-engine-${i}`)));
    const figures: RaceFigures[] = [];
    let invariants: string[];
    try {
      for (const [n, r] of plan.entries()) figures.push(await runRace(s, engines, n, r));
      invariants = await finalHistory(url, s, figures);
    } finally {
      for (const engine of engines) engine.child.stdin!.end();
      await s.close();
    }
    const doubled = figures.filter((f) => Math.max(f.mostLive.feed ?? 0, f.mostLive.polled, f.mostLive.final) > 1);
    console.log(summary(seed, figures, doubled).replace('[one-live-run]', '[one-live-run processes]'));
    expect(doubled.map((f) => ({ race: f.race, mostLive: f.mostLive }))).toEqual([]);
    expect(figures.flatMap((f) => f.problems.map((p) => `${JSON.stringify(f.race)}: ${p}`))).toEqual([]);
    expect(invariants, 'the final history holds every invariant').toEqual([]);
  }, 600_000);
});
