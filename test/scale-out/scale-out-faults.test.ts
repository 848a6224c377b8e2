import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, expect, test } from 'vitest';
import { isOccurrenceTerminal } from '../../machines/index.js';
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

function spawnEngine(env: Record<string, string>, label: string): Promise<EngineChild> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/scale-out/engine-process.ts'], {
    cwd: root,
    env: { ...process.env, ...env, COVEN_ENGINE_LABEL: label },
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
        'SELECT session_key, run_id, attempt_id, at, feed_end::int AS feed_end FROM launch_ledger WHERE NOT fenced',
      )
    ).rows;
  } finally {
    await client.end();
  }
}

/** How many occurrences are not yet terminal or waiting for an operator. */
async function unsettled(store: PostgresStore): Promise<string[]> {
  const occurrences = await store.read((r) => r.list<{ snapshot: { value: string } }>('occurrence'));
  return occurrences
    .filter((o) => !isOccurrenceTerminal(o.data.snapshot.value) && o.data.snapshot.value !== 'recovery_required')
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
  round: number,
  fault: Fault,
  due: number,
  runNows: number,
  random: (n: number) => number,
): Promise<RoundFigures> {
  const { url, store, env, runtime, commander, manualIds } = await prepareRound(socketDir, round, due, runNows);
  const started = performance.now();
  const engines = await Promise.all(
    Array.from({ length: ENGINES }, (_, i) => spawnEngine(env, `engine-${round}-${i}`)),
  );
  const half = Math.floor(manualIds.length / 2);
  await runNowAll(commander, manualIds.slice(0, half));
  const faultAtLaunch = 1 + random(Math.max(1, Math.floor(due * 0.8)));
  await launchesReach(url, faultAtLaunch);
  const victim = random(ENGINES);
  if (fault === 'sigkill') {
    engines[victim]!.child.kill('SIGKILL');
    engines[victim] = await spawnEngine(env, `engine-${round}-restarted`);
  } else {
    expect(await cutConnections(url, `engine-${round}-${victim}`)).toBeGreaterThan(0);
  }
  const faultAt = performance.now();
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
  const settled = performance.now();
  const launches = await ledger(url);
  const perRun = new Map<string, number>();
  for (const l of launches) perRun.set(l.run_id, (perRun.get(l.run_id) ?? 0) + 1);
  const states: Record<string, number> = {};
  for (const o of await store.read((r) => r.list<{ snapshot: { value: string } }>('occurrence')))
    states[o.data.snapshot.value] = (states[o.data.snapshot.value] ?? 0) + 1;
  const problems = await invariantProblems(store, url);
  for (const engine of engines) engine.child.kill('SIGTERM');
  await commander.stop();
  await runtime.close();
  await store.close();
  expect(problems.slice(0, 5), 'the history holds every invariant').toEqual([]);
  return {
    due,
    runNows,
    fault,
    launches: launches.length,
    duplicateLaunches: [...perRun.values()].filter((n) => n > 1).length,
    states,
    faultAtLaunch,
    settledMsAfterFault: Math.round(settled - faultAt),
    burstMs: Math.round(settled - started),
  };
}

describePostgres('scale-out: engine processes sharing one PostgreSQL database', (socketDir) => {
  const rounds: Array<{ fault: Fault; due: number; runNows: number }> = STRESS
    ? Array.from({ length: 10 }, (_, i) => ({
        fault: i % 3 === 2 ? 'connection-cut' : 'sigkill',
        due: 1000,
        runNows: 100,
      }))
    : [
        { fault: 'sigkill', due: 1000, runNows: 100 },
        { fault: 'sigkill', due: 200, runNows: 40 },
        { fault: 'sigkill', due: 200, runNows: 40 },
        { fault: 'connection-cut', due: 300, runNows: 40 },
      ];

  test.each(rounds.map((r, i) => ({ ...r, round: i + 1 })))(
    `round $round: $due due occurrences and $runNows run-now requests on ${ENGINES} engines, $fault at a random point`,
    async ({ round, fault, due, runNows }) => {
      const seed = propertySeed(`scale-out round ${round} (${fault})`);
      const figures = await runRound(socketDir, round, fault, due, runNows, seeded(seed + round));
      console.log(`[scale-out] ${JSON.stringify(figures)}`);
      expect(figures.duplicateLaunches, 'launches per fence beyond one').toBe(0);
      const occurrences = Object.values(figures.states).reduce((a, b) => a + b, 0);
      expect(occurrences, 'one occurrence per due slot and per run-now request, none lost').toBe(due + runNows);
      expect(figures.launches).toBeLessThanOrEqual(due + runNows);
    },
    300_000,
  );
});
