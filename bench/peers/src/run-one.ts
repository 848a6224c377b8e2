// One run: a system under one workload in a child process (two for the crash workload: the killed one and its
// restart), on a database or Redis emptied for it, in a temp directory of its own.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  PEERS,
  RESULT_PREFIX,
  type ChildResult,
  type ChildSpec,
  type CrashResult,
  type RecoverResult,
  type RunResult,
  type SystemName,
  type WorkloadName,
} from './protocol.js';
import type { PostgresServer, RedisServer } from './servers.js';

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHILD = join(PACKAGE_DIR, 'src', 'child.ts');
/** A child that has not answered in this long has hung: it is killed and the run fails. */
const CHILD_LIMIT_MS = 10 * 60_000;
/** How often the crash run's execution log is counted, to kill the child once half the burst ran. */
const KILL_POLL_MS = 2;

export interface Settings {
  jobs: number;
  concurrency: number;
  ratePerMinute: number;
  seconds: number;
  /** Steady arrivals sent before the measured window, at the same rate, and not measured. */
  warmUpSeconds: number;
  recoverSeconds: number;
  /** The baseline checkout the baseline systems run (`--baseline`). */
  baselineRoot?: string;
}

export interface Servers {
  pg?: PostgresServer;
  redis?: RedisServer;
}

const usesPostgres = (s: SystemName) =>
  s === 'graphile-worker' || s === 'pg-boss' || s === 'coven-postgres' || s === 'coven-postgres-baseline';

interface Child {
  kill(): void;
  done: Promise<ChildResult>;
}

function startChild(spec: ChildSpec): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(spec)], {
    cwd: PACKAGE_DIR,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS);
  const done = new Promise<ChildResult>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (code === 0 && line !== undefined) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as ChildResult);
      else reject(new Error(`${spec.system} ${spec.workload} ${spec.phase}: exit ${signal ?? code}`));
    });
  });
  return { kill: () => child.kill('SIGKILL'), done };
}

const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];

/** Kill mid-burst once half the jobs ran, restart, then count from the execution log and the system's state. */
async function crash(spec: ChildSpec): Promise<CrashResult> {
  const log = join(spec.dir, 'executions.log');
  const first = startChild(spec);
  let exited = false;
  const outcome = first.done.then(
    () => (exited = true),
    () => (exited = true),
  );
  while (!exited && lines(log).length < spec.jobs / 2) await sleep(KILL_POLL_MS);
  if (exited) await first.done;
  first.kill();
  await outcome;
  const executedAtKill = lines(log).length;
  const recovered = (await startChild({ ...spec, phase: 'recover' }).done) as RecoverResult;
  const runs = new Map<string, number>();
  for (const line of lines(log)) {
    const key = line.split(' ')[0]!;
    runs.set(key, (runs.get(key) ?? 0) + 1);
  }
  const duplicates = [...runs.values()].reduce((sum, n) => sum + n - 1, 0);
  return {
    kind: 'crash',
    accepted: recovered.accepted,
    executedAtKill,
    duplicates,
    neverRun: Math.max(0, recovered.accepted - runs.size),
    unfinished: recovered.unfinished,
    recoverS: recovered.recoverS,
  };
}

export async function runOne(
  system: SystemName,
  workload: WorkloadName,
  round: number,
  settings: Settings,
  servers: Servers,
): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'peers-run-'));
  const database = `peers_${system.replace(/-/g, '_')}_${workload}_${round}`;
  const pg = usesPostgres(system) ? servers.pg : undefined;
  if (usesPostgres(system) && pg === undefined) throw new Error(`${system} needs the PostgreSQL server`);
  try {
    if (pg !== undefined) await pg.createDatabase(database);
    if (system === 'bullmq') await servers.redis!.flush();
    const spec: ChildSpec = {
      system,
      workload,
      phase: 'run',
      ...settings,
      dir,
      servers: {
        ...(pg === undefined ? {} : { pgUrl: pg.url(database), pgPid: pg.pid }),
        ...(system === 'bullmq' ? { redisPort: servers.redis!.port, redisPid: servers.redis!.pid } : {}),
      },
    };
    if (workload === 'crash') return await crash(spec);
    return (await startChild(spec).done) as RunResult;
  } finally {
    if (pg !== undefined) await pg.dropDatabase(database).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

export const needsPostgres = (systems: SystemName[]) => systems.some(usesPostgres);
export const needsRedis = (systems: SystemName[]) => systems.includes('bullmq');
export { PEERS };
