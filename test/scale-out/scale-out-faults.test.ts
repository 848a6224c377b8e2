import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, expect, test } from 'vitest';
import { isOccurrenceTerminal } from '../../machines/index.js';
import { OBSERVE_INTERVAL_MS } from '../../src/engine/next-wake.js';
import { KINDS, attemptContext, type AttemptRecord } from '../../src/domain/records.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { INVARIANTS } from '../../src/testkit/invariants/checks.js';
import { send } from '../../bench/fixtures.js';
import { defineAll, DUE_DAILY_AT_TEN, NEVER_DUE_TODAY, offsetToSlot } from '../../bench/scale-out/setup.js';
import { eventually } from '../support/eventually.js';
import { propertySeed } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { LedgerRuntime } from '../../bench/scale-out/ledger-runtime.js';
import { terminate } from '../support/terminate.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** CI sizes; COVEN_STRESS=1 runs the long sizes (more rounds, 1,000 due occurrences in every round). */
const STRESS = process.env.COVEN_STRESS === '1';
const ENGINES = 3;
const LEASE_SECONDS = 4;

interface EngineChild {
  child: ChildProcess;
  out: () => string;
}
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

/**
 * `separate`: each engine's owner lease names a host of its own, so a killed engine's work waits out its lease
 * as on a cluster of machines; `one`: the engines know each other's process ids and see a death at once.
 */
type Hosts = 'one' | 'separate';

function spawnEngine(env: Record<string, string>, label: string, hosts: Hosts): Promise<EngineChild> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/scale-out/engine-process.ts'], {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      COVEN_ENGINE_LABEL: label,
      ...(hosts === 'separate' ? { COVEN_ENGINE_HOST: label } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  return eventually(async () => {
    if (child.exitCode !== null) throw new Error(`engine ${label} exited ${child.exitCode}: ${out}`);
    return out.includes('ready ') ? { child, out: () => out } : undefined;
  }, 30_000);
}

/** Every launch the ledger holds: one row per launch call that reached it (fences excluded). */
async function ledger(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (
      await client.query<{ session_key: string; run_id: string; attempt_id: string; at: Date; feed_end: number }>(
        'SELECT session_key, run_id, attempt_id, at, feed_end::float8 AS feed_end FROM launch_ledger WHERE NOT fenced',
      )
    ).rows;
  } finally {
    await client.end();
  }
}

const settledOrWaiting = (state: string) => isOccurrenceTerminal(state) || state === 'recovery_required';

/** The occurrences whose launch `instanceId` sent and had not seen settled: what another engine must take over. */
async function launchedBy(store: PostgresStore, instanceId: string): Promise<string[]> {
  const attempts = await store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt));
  const held = attempts
    .filter((a) => a.data.attributes.workerCorrelation?.workerId === instanceId)
    .map((a) => attemptContext(a as AttemptRecord).occurrenceId);
  const states = await store.read((r) =>
    Promise.all(held.map((id) => r.get<{ snapshot: { value: string } }>('occurrence', id))),
  );
  return held.filter((_, i) => !settledOrWaiting(states[i]!.data.snapshot.value));
}

/** The passes an engine process printed (COVEN_ENGINE_PASSES=1): when each ended (epoch ms) and how long it ran. */
function passesOf(output: string): Array<{ end: number; ms: number }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('pass '))
    .map((line) => JSON.parse(line.slice(5)) as { at: number; phaseMs: Record<string, number> })
    .map((p) => ({ end: p.at, ms: Object.values(p.phaseMs).reduce((a, b) => a + b, 0) }));
}

/**
 * How long the victim's launches may take to settle after the fault: the victim's lease when the others must
 * wait it out (another host, or a victim that lives on with its connections cut), then two of the others'
 * longest passes in that window (the pass under way when the lease lapsed, and the one that takes the work
 * over), and one observation interval an idle engine may sleep before it looks.
 */
function takeoverBound(engines: EngineChild[], window: { from: number; to: number }, waitsOutLease: boolean) {
  const passes = engines.flatMap((e) => passesOf(e.out()));
  const longestPassMs = Math.max(
    0,
    ...passes.filter((p) => p.end >= window.from && p.end - p.ms <= window.to).map((p) => p.ms),
  );
  const boundMs = (waitsOutLease ? LEASE_SECONDS * 1000 : 0) + 2 * longestPassMs + OBSERVE_INTERVAL_MS;
  return { longestPassMs: Math.round(longestPassMs), boundMs: Math.round(boundMs) };
}

/** Waits until every occurrence of `ids` is terminal or waiting for an operator. */
async function settled(store: PostgresStore, ids: string[]): Promise<void> {
  await eventually(async () => {
    const states = await store.read((r) =>
      Promise.all(ids.map((id) => r.get<{ snapshot: { value: string } }>('occurrence', id))),
    );
    return states.every((o) => settledOrWaiting(o!.data.snapshot.value)) ? true : undefined;
  }, 180_000);
}

/** How many occurrences are not yet terminal or waiting for an operator. */
async function unsettled(store: PostgresStore): Promise<string[]> {
  const occurrences = await store.read((r) => r.list<{ snapshot: { value: string } }>('occurrence'));
  return occurrences
    .filter((o) => !settledOrWaiting(o.data.snapshot.value))
    .map((o) => `${o.id}: ${o.data.snapshot.value}`);
}

/** The history's invariant problems, with the ledger standing in for the runtime's log. */
async function invariantProblems(store: PostgresStore, url: string): Promise<string[]> {
  const launches = (await ledger(url)).map((row) => ({
    sessionKey: row.session_key,
    attemptId: row.attempt_id,
    at: row.at.toISOString(),
    sessionId: row.session_key,
    feedEnd: row.feed_end,
  }));
  const exits = new Map(launches.map((l) => [l.sessionKey, { outcome: 'succeeded' as const, cancelled: false }]));
  const history = await captureHistory(
    store,
    { launches, cancels: [], exits, lost: new Set() },
    new Date().toISOString(),
    [],
  );
  return INVARIANTS.flatMap((invariant) => invariant.check(history, undefined).map((p) => `${invariant.id}: ${p}`));
}

/** A seeded generator of integers in [0, n): the round's random points, replayable from the printed seed. */
function seeded(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

type Fault = 'sigkill' | 'connection-cut';

interface RoundFigures {
  due: number;
  runNows: number;
  fault: Fault;
  hosts: Hosts;
  /** Occurrences whose launch the victim had sent and not seen settled when the fault struck. */
  victimLaunches: number;
  /** From the fault until the last of those was terminal or waiting for an operator. */
  victimSettledMs: number;
  /** What victimSettledMs may not exceed (see takeoverBound), and the longest pass it allowed for. */
  takeover: { longestPassMs: number; boundMs: number };
  launches: number;
  duplicateLaunches: number;
  states: Record<string, number>;
  faultAtLaunch: number;
  settledMsAfterFault: number;
  burstMs: number;
}

/** Waits until the ledger holds at least `count` launches. */
const launchesReach = (url: string, count: number) =>
  eventually(async () => ((await ledger(url)).length >= count ? true : undefined), 120_000);

/** Ends every database session of one engine process (its pool and its listener), as a network fault would. */
async function cutConnections(url: string, label: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1',
      [`coven ${label}%`],
    );
    return rows.length;
  } finally {
    await client.end();
  }
}

/** Runs the manual occurrences this process asks for while the engines work, as a CLI on another host would. */
async function runNowAll(commander: Engine, ids: string[]): Promise<void> {
  const answers = await Promise.all(ids.map((id) => send(commander, 'occurrence.runNow.v1', { automationId: id })));
  const refused = answers.filter((a) => a.outcome === 'rejected').map((a) => `${a.error?.code}: ${a.error?.message}`);
  expect(refused, 'every run-now request is accepted').toEqual([]);
}

async function prepareRound(socketDir: string, round: number, due: number, runNows: number) {
  const url = await freshDatabase(socketDir, `scale_${round}`);
  await LedgerRuntime.prepare(url);
  const store = await PostgresStore.open(url, { schema: 'coven', applicationName: 'coven test' });
  const dueIds = Array.from({ length: due }, (_, i) => `due-${String(i).padStart(4, '0')}`);
  const manualIds = Array.from({ length: runNows }, (_, i) => `manual-${String(i).padStart(4, '0')}`);
  const runtime = new LedgerRuntime(url, 'commander', 'coven');
  await defineAll(store, runtime, dueIds, DUE_DAILY_AT_TEN);
  await defineAll(store, runtime, manualIds, NEVER_DUE_TODAY);
  const offset = offsetToSlot();
  const env = {
    COVEN_STORE: url,
    COVEN_LEDGER_URL: url,
    COVEN_STORE_SCHEMA: 'coven',
    COVEN_CLOCK_OFFSET_MS: String(offset),
    COVEN_LEASE_SECONDS: String(LEASE_SECONDS),
    COVEN_ENGINE_PASSES: '1',
  };
  const commander = createEngine({
    store,
    runtimes: [runtime],
    clock: { now: () => new Date(Date.now() + offset) },
    instanceId: `commander-${round}`,
    leaseSeconds: LEASE_SECONDS,
    retention: false,
  });
  return { url, store, env, runtime, commander, manualIds };
}

/**
 * One round: ENGINES engine processes on a fresh database with `due` occurrences due at once, half the run-now
 * requests sent, the fault at a random point of the burst (a random number of launches in), the other half
 * sent, then everything must settle and the history must hold every invariant.
 */
async function runRound(
  socketDir: string,
  { round, fault, hosts, due, runNows }: RoundPlan,
  random: (n: number) => number,
): Promise<RoundFigures> {
  const { url, store, env, runtime, commander, manualIds } = await prepareRound(socketDir, round, due, runNows);
  const started = performance.now();
  const engines = await Promise.all(
    Array.from({ length: ENGINES }, (_, i) => spawnEngine(env, `engine-${round}-${i}`, hosts)),
  );
  const half = Math.floor(manualIds.length / 2);
  await runNowAll(commander, manualIds.slice(0, half));
  const faultAtLaunch = 1 + random(Math.max(1, Math.floor(due * 0.8)));
  await launchesReach(url, faultAtLaunch);
  const victim = random(ENGINES);
  const victimLaunches = await launchedBy(store, `engine-${round}-${victim}-${engines[victim]!.child.pid}`);
  let faultAt: number;
  const faultWall = Date.now();
  if (fault === 'sigkill') {
    engines[victim]!.child.kill('SIGKILL');
    faultAt = performance.now();
    engines[victim] = await spawnEngine(env, `engine-${round}-restarted`, hosts);
  } else {
    expect(await cutConnections(url, `engine-${round}-${victim}`)).toBeGreaterThan(0);
    faultAt = performance.now();
  }
  const victimSettled = settled(store, victimLaunches).then(() => performance.now() - faultAt);
  await runNowAll(commander, manualIds.slice(half));
  await eventually(async () => ((await unsettled(store)).length === 0 ? true : undefined), 180_000).catch(
    async (error: Error) => {
      const logs = engines.map((e, i) => `engine ${i}: ${e.out().split('\n').slice(-6).join(' | ')}`).join('\n');
      const activity = new pg.Client({ connectionString: url });
      await activity.connect();
      const { rows } = await activity.query(
        "SELECT application_name, state, left(query, 80) AS query, now() - xact_start AS open_for FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'coven%'",
      );
      await activity.end();
      console.log(JSON.stringify(rows, null, 1));
      throw new Error(`${error.message}; unsettled: ${(await unsettled(store)).slice(0, 5).join(', ')}\n${logs}`);
    },
  );
  const settledAt = performance.now();
  const victimSettledMs = Math.round(await victimSettled);
  const takeover = takeoverBound(
    engines,
    { from: faultWall, to: faultWall + victimSettledMs },
    hosts === 'separate' || fault === 'connection-cut',
  );
  const launches = await ledger(url);
  const perRun = new Map<string, number>();
  for (const l of launches) perRun.set(l.run_id, (perRun.get(l.run_id) ?? 0) + 1);
  const states: Record<string, number> = {};
  for (const o of await store.read((r) => r.list<{ snapshot: { value: string } }>('occurrence')))
    states[o.data.snapshot.value] = (states[o.data.snapshot.value] ?? 0) + 1;
  // Read once no engine commits: on PostgreSQL the feed is served below the visibility horizon (captureHistory).
  await Promise.all(engines.map((engine, i) => terminate(engine.child, `engine ${i}`)));
  await commander.stop();
  const problems = await invariantProblems(store, url);
  // COVEN_SCALE_LOGS=<dir> keeps each engine's output (with COVEN_ENGINE_PASSES=1, a line per pass) for diagnosis.
  if (process.env.COVEN_SCALE_LOGS !== undefined)
    engines.forEach((e, i) =>
      writeFileSync(join(process.env.COVEN_SCALE_LOGS!, `round-${round}-engine-${i}.log`), e.out()),
    );
  await runtime.close();
  await store.close();
  expect(problems.slice(0, 5), 'the history holds every invariant').toEqual([]);
  return {
    due,
    runNows,
    fault,
    hosts,
    victimLaunches: victimLaunches.length,
    victimSettledMs,
    takeover,
    launches: launches.length,
    duplicateLaunches: [...perRun.values()].filter((n) => n > 1).length,
    states,
    faultAtLaunch,
    settledMsAfterFault: Math.round(settledAt - faultAt),
    burstMs: Math.round(settledAt - started),
  };
}

interface RoundPlan {
  round: number;
  fault: Fault;
  hosts: Hosts;
  due: number;
  runNows: number;
}

/** CI's rounds, or (COVEN_STRESS=1) ten of the size: 1,000 due and 100 run-now each. */
function roundPlans(): RoundPlan[] {
  const plans: Array<Omit<RoundPlan, 'round'>> = STRESS
    ? Array.from({ length: 10 }, (_, i) => ({
        fault: i % 3 === 2 ? 'connection-cut' : 'sigkill',
        hosts: i % 2 === 0 ? 'separate' : 'one',
        due: 1000,
        runNows: 100,
      }))
    : [
        { fault: 'sigkill', hosts: 'separate', due: 1000, runNows: 100 },
        { fault: 'sigkill', hosts: 'one', due: 200, runNows: 40 },
        { fault: 'sigkill', hosts: 'separate', due: 200, runNows: 40 },
        { fault: 'connection-cut', hosts: 'separate', due: 300, runNows: 40 },
      ];
  return plans.map((plan, i) => ({ ...plan, round: i + 1 }));
}

describePostgres('scale-out: engine processes sharing one PostgreSQL database', (socketDir) => {
  test.each(roundPlans())(
    `round $round: $due due occurrences and $runNows run-now requests on ${ENGINES} engines ($hosts host), $fault at a random point`,
    async (plan) => {
      const seed = propertySeed(`scale-out round ${plan.round} (${plan.fault})`);
      const figures = await runRound(socketDir, plan, seeded(seed + plan.round));
      console.log(`[scale-out] ${JSON.stringify(figures)}`);
      expect(figures.duplicateLaunches, 'launches per fence beyond one').toBe(0);
      const occurrences = Object.values(figures.states).reduce((a, b) => a + b, 0);
      expect(occurrences, 'one occurrence per due slot and per run-now request, none lost').toBe(
        plan.due + plan.runNows,
      );
      expect(figures.launches).toBeLessThanOrEqual(plan.due + plan.runNows);
      expect(figures.victimSettledMs, "the victim's launches settled within the takeover bound").toBeLessThanOrEqual(
        figures.takeover.boundMs,
      );
      // Every launch reached the ledger or was fenced there: evidence decides each, none waits for an operator.
      expect(figures.states.recovery_required ?? 0, 'occurrences sent to the operator despite evidence').toBe(0);
    },
    300_000,
  );
});
