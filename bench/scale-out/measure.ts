// The scale-out measurement: the same burst (`due` definitions due at one instant) worked by one engine process on
// SQLite, and by 1, 2 and 4 engine processes on one PostgreSQL database, side by side (configurations interleaved
// each round, so the machine's drift hits all alike). Wall time from the slot to the last occurrence settled, and
// CPU per occurrence over the same window: the engine processes' own plus the PostgreSQL server's, from /proc. With a
// warm-up, each engine process first works a burst of its own (warm-up.ts). Used by bench/scale-out.ts and by
// `npm run bench` (its scale-out cells, cold).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../../src/store/open-store.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { startCluster, type PostgresCluster } from '../../test/support/postgres-cluster.js';
import { procCpuSeconds, serverCpuSeconds } from '../server-cpu.js';
import { LedgerRuntime } from './ledger-runtime.js';
import { defineAll, DUE_DAILY_AT_TEN, offsetToSlot } from './setup.js';

export const SCALE_OUT_CONFIGS = [
  { name: 'sqlite, 1 engine', store: 'sqlite' as const, engines: 1 },
  { name: 'postgres, 1 engine', store: 'postgres' as const, engines: 1 },
  { name: 'postgres, 2 engines', store: 'postgres' as const, engines: 2 },
  { name: 'postgres, 4 engines', store: 'postgres' as const, engines: 4 },
];
type Config = (typeof SCALE_OUT_CONFIGS)[number];

const START_IN_MS = 10_000;
/** After warming, engines only create their engine: the slot comes this long after the `go` line. */
const GO_IN_MS = 2_000;

interface EngineProcess {
  child: ChildProcess;
  lines: string[];
  /** Resolves once the process printed a line starting with `prefix` (at any time, before or after this call). */
  printed(prefix: string): Promise<void>;
}

/** Starts an engine process; with `warmUp` it warms first and waits for its `go` line (engine-process.ts). */
function spawnEngine(env: Record<string, string>, label: string, warmUp: number): EngineProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/scale-out/engine-process.ts'], {
    env: { ...process.env, ...env, COVEN_ENGINE_LABEL: label, COVEN_WARM_UP: String(warmUp) },
    stdio: [warmUp > 0 ? 'pipe' : 'ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const exited = new Promise<never>((_, failed) =>
    child.once('exit', (code) => failed(new Error(`engine ${label} exited ${code}`))),
  );
  exited.catch(() => undefined);
  const waiting: Array<() => void> = [];
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const fresh = text.split('\n');
    partial = fresh.pop()!;
    lines.push(...fresh);
    if (process.env.COVEN_BENCH_VERBOSE === '1') for (const line of fresh) process.stderr.write(`[${label}] ${line}\n`);
    for (const wake of waiting.splice(0)) wake();
  });
  const printed = (prefix: string): Promise<void> => {
    const seen = new Promise<void>((done) => {
      const check = () => (lines.some((l) => l.startsWith(prefix)) ? done() : waiting.push(check));
      check();
    });
    return Promise.race([seen, exited]);
  };
  return { child, lines, printed };
}

/** Resolves once the engines together report `due` attempts settled (each counted by the engine that won it). */
function allSettled(engines: EngineProcess[], due: number): Promise<void> {
  return new Promise((done) => {
    const settled = () =>
      engines.reduce(
        (sum, e) => sum + e.lines.filter((l) => l.startsWith('settled ')).reduce((n, l) => n + Number(l.slice(8)), 0),
        0,
      );
    const check = () => (settled() >= due ? done() : setTimeout(check, 20));
    check();
  });
}

async function stopAll(engines: EngineProcess[]): Promise<void> {
  await Promise.all(
    engines.map(
      (e) =>
        new Promise<void>((done) => {
          e.child.once('exit', () => done());
          e.child.kill('SIGTERM');
        }),
    ),
  );
}

/** The engine processes' CPU so far, from /proc. */
const enginesCpuSeconds = (engines: EngineProcess[]) =>
  engines.reduce((sum, e) => sum + procCpuSeconds(e.child.pid!, false), 0);

/** Resolves at `at` (performance.now() time base). */
const until = (at: number) => new Promise((done) => setTimeout(done, Math.max(0, at - performance.now())));

async function freshDatabase(cluster: PostgresCluster, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return cluster.url.replace('/postgres?', `/${name}?`);
}

/** One configuration's run of one round. */
export interface Measured {
  wallS: number;
  engineCpuS: number;
  serverCpuS: number;
}

async function measure(
  cluster: PostgresCluster,
  config: Config,
  round: number,
  due: number,
  warmUp: number,
): Promise<Measured> {
  const ledgerUrl = await freshDatabase(cluster, `scale_${round}_${config.store}_${config.engines}`);
  await LedgerRuntime.prepare(ledgerUrl);
  const dir = mkdtempSync(join(tmpdir(), 'coven-scale-'));
  const location = config.store === 'postgres' ? ledgerUrl : join(dir, 'store.sqlite');
  const store = config.store === 'postgres' ? await PostgresStore.open(location) : await openStore(location);
  const setupRuntime = new LedgerRuntime(ledgerUrl, 'setup');
  await defineAll(
    store,
    setupRuntime,
    Array.from({ length: due }, (_, i) => `due-${i}`),
    DUE_DAILY_AT_TEN,
  );
  await store.close();
  await setupRuntime.close();
  const env = { COVEN_STORE: location, COVEN_LEDGER_URL: ledgerUrl };
  const labels = Array.from({ length: config.engines }, (_, i) => `e${i}`);
  let engines: EngineProcess[];
  let slotAt: number;
  if (warmUp === 0) {
    // The slot arrives START_IN_MS from now on the engines' shared clock: every engine is running by then.
    slotAt = performance.now() + START_IN_MS;
    const offset = offsetToSlot() - 500 - START_IN_MS;
    engines = labels.map((label) => spawnEngine({ ...env, COVEN_CLOCK_OFFSET_MS: String(offset) }, label, 0));
    await Promise.all(engines.map((e) => e.printed('ready ')));
  } else {
    engines = labels.map((label) => spawnEngine(env, label, warmUp));
    await Promise.all(engines.map((e) => e.printed('warmed')));
    slotAt = performance.now() + GO_IN_MS;
    const offset = offsetToSlot() - 500 - GO_IN_MS;
    for (const e of engines) e.child.stdin!.write(`go ${offset}\n`);
    await Promise.all(engines.map((e) => e.printed('ready ')));
  }
  if (performance.now() > slotAt) throw new Error('the engines took too long to start: the slot came first');
  // CPU is the burst's, from the slot to the last settlement: not loading code, opening stores or idle passes before.
  await until(slotAt);
  const [engineBefore, serverBefore] = [enginesCpuSeconds(engines), serverCpuSeconds(cluster)];
  await allSettled(engines, due);
  const wallS = (performance.now() - slotAt) / 1000;
  const serverCpuS = serverCpuSeconds(cluster) - serverBefore;
  const engineCpuS = enginesCpuSeconds(engines) - engineBefore;
  await stopAll(engines);
  rmSync(dir, { recursive: true, force: true });
  return { wallS, engineCpuS, serverCpuS };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cell = (xs: number[], digits = 2) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

/** Every configuration's runs, by name, in {@link SCALE_OUT_CONFIGS} order. */
export type ScaleOutResults = Map<string, Measured[]>;

/**
 * Starts a throwaway PostgreSQL cluster (fsync and synchronous_commit on), measures every configuration once
 * per round, the order rotated by one each round, and stops the cluster.
 */
export async function measureScaleOut(options: {
  rounds: number;
  due: number;
  /** Occurrences each engine process works before the measured burst (warm-up.ts); 0: engines start cold. */
  warmUp?: number;
  log: (line: string) => void;
}): Promise<ScaleOutResults> {
  const cluster = await startCluster();
  const results: ScaleOutResults = new Map(SCALE_OUT_CONFIGS.map((c) => [c.name, []]));
  try {
    for (let round = 0; round < options.rounds; round++) {
      const order = SCALE_OUT_CONFIGS.map((_, i) => SCALE_OUT_CONFIGS[(i + round) % SCALE_OUT_CONFIGS.length]!);
      for (const config of order) {
        const m = await measure(cluster, config, round, options.due, options.warmUp ?? 0);
        results.get(config.name)!.push(m);
        options.log(`round ${round + 1} ${config.name}: ${m.wallS.toFixed(2)} s`);
      }
    }
  } finally {
    await cluster.stop();
  }
  return results;
}

export const SCALE_OUT_HEADER = [
  'configuration',
  'wall s',
  'occurrences/s',
  'engine CPU ms/occ',
  'server CPU ms/occ',
  'total CPU ms/occ',
  'wall vs SQLite',
  'total CPU vs SQLite',
  'throughput vs 1 PG engine',
  'slowest round ÷ median',
];

/** The table's rows: median (min–max) over rounds, and each median's ratio to the SQLite engine's. */
export function scaleOutRows(results: ScaleOutResults, due: number): string[][] {
  const perOcc = (s: number) => (s * 1000) / due;
  const total = (m: Measured) => perOcc(m.engineCpuS + m.serverCpuS);
  const sqlite = results.get(SCALE_OUT_CONFIGS[0]!.name)!;
  const onePostgres = median(results.get(SCALE_OUT_CONFIGS[1]!.name)!.map((m) => m.wallS));
  return SCALE_OUT_CONFIGS.map((c) => {
    const ms = results.get(c.name)!;
    const wall = median(ms.map((m) => m.wallS));
    return [
      c.name,
      cell(ms.map((m) => m.wallS)),
      cell(
        ms.map((m) => due / m.wallS),
        0,
      ),
      cell(ms.map((m) => perOcc(m.engineCpuS))),
      cell(ms.map((m) => perOcc(m.serverCpuS))),
      cell(ms.map(total)),
      `${(wall / median(sqlite.map((m) => m.wallS))).toFixed(2)}x`,
      `${(median(ms.map(total)) / median(sqlite.map(total))).toFixed(2)}x`,
      c.store === 'postgres' ? `${(onePostgres / wall).toFixed(2)}x` : '',
      `${(Math.max(...ms.map((m) => m.wallS)) / wall).toFixed(2)}x`,
    ];
  });
}
