// The peer bench: `npm run bench -- [--quick] [--rounds N] [--workloads burst,steady,crash] [--systems …]`.
// Starts throwaway PostgreSQL and Redis servers, runs every system under every workload in rounds (each round
// rotates the systems' order, so none always runs first or last), waits for a quiet machine before each run,
// prints medians with min–max and coven/peer ratios, writes results/<timestamp>.json, stops the servers.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_SYSTEMS, NOT_DURABLE, SYSTEMS, WORKLOADS, type SystemName, type WorkloadName } from './protocol.js';
import { renderTable, summarize, type RunRecord } from './report.js';
import { needsPostgres, needsRedis, runOne, type Servers, type Settings } from './run-one.js';
import { PostgresServer, RedisServer } from './servers.js';

const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');
const REPOSITORY = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const QUIET_POLL_MS = 5_000;

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

function list<T extends string>(name: string, allowed: readonly T[], defaults: readonly T[] = allowed): T[] {
  const value = flag(name);
  if (value === undefined) return [...defaults];
  const picked = value.split(',').map((s) => s.trim()) as T[];
  const unknown = picked.filter((p) => !allowed.includes(p));
  if (unknown.length > 0) throw new Error(`--${name}: unknown ${unknown.join(', ')} (known: ${allowed.join(', ')})`);
  return picked;
}

function options() {
  const quick = process.argv.includes('--quick');
  const num = (name: string, full: number, fast: number) => Number(flag(name) ?? (quick ? fast : full));
  const settings: Settings = {
    jobs: num('jobs', 1000, 200),
    concurrency: num('concurrency', 16, 16),
    ratePerMinute: num('rate', 2000, 2000),
    seconds: num('seconds', 60, 10),
    warmUpSeconds: num('warm-up-s', 5, 2),
    recoverSeconds: num('recover-seconds', 90, 30),
  };
  return {
    quick,
    settings,
    rounds: num('rounds', 3, 1),
    quietLoad: num('quiet-load', 1.5, 1.5),
    quietWaitS: num('quiet-wait-s', 600, 10),
    systems: withBaseline(list<SystemName>('systems', SYSTEMS, DEFAULT_SYSTEMS), flag('baseline')),
    baseline: flag('baseline'),
    workloads: list<WorkloadName>('workloads', WORKLOADS),
    out: flag('out'),
  };
}

/**
 * With `--baseline`, coven on SQLite and on PostgreSQL (each when selected) run on both engines: the baseline's
 * right after this checkout's.
 */
function withBaseline(systems: SystemName[], baseline: string | undefined): SystemName[] {
  if (baseline === undefined) return systems;
  let out = systems;
  for (const [system, base] of [
    ['coven-sqlite', 'coven-sqlite-baseline'],
    ['coven-postgres', 'coven-postgres-baseline'],
  ] as const) {
    const at = out.indexOf(system);
    if (at !== -1 && !out.includes(base)) out = out.toSpliced(at + 1, 0, base);
  }
  return out.includes('coven-sqlite-baseline') || out.includes('coven-postgres-baseline')
    ? out
    : [...out, 'coven-sqlite-baseline'];
}

/**
 * The engine at git revision `rev`, checked out in a temp folder (`git archive`, so the repository is not touched)
 * with this checkout's node_modules, for `coven-sqlite-baseline`. Answers the folder and how to remove it.
 */
function checkoutBaseline(rev: string): { root: string; remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'peers-baseline-'));
  const archive = execFileSync('git', ['-C', REPOSITORY, 'archive', '--format=tar', rev], {
    maxBuffer: 512 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', root], { input: archive });
  symlinkSync(join(REPOSITORY, 'node_modules'), join(root, 'node_modules'), 'dir');
  const commit = execFileSync('git', ['-C', REPOSITORY, 'rev-parse', '--short', rev], { encoding: 'utf8' }).trim();
  process.stderr.write(`baseline: ${rev} (${commit}) in ${root}\n`);
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** Waits until the one-minute load average is below `limit` (at most `waitS`); answers the load it saw last. */
async function quiet(limit: number, waitS: number): Promise<number> {
  const deadline = performance.now() + waitS * 1000;
  for (;;) {
    const load = loadavg()[0]!;
    if (load < limit) return load;
    if (performance.now() > deadline) {
      process.stderr.write(`  load ${load.toFixed(2)} still ≥ ${limit} after ${waitS} s: running anyway (recorded)\n`);
      return load;
    }
    await sleep(QUIET_POLL_MS);
  }
}

const rotate = <T>(xs: T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]!);

async function main(): Promise<void> {
  const o = options();
  const servers: Servers = {};
  const stop = async () => {
    servers.pg?.stop();
    await servers.redis?.stop();
  };
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));
  const records: RunRecord[] = [];
  const started = new Date();
  const baseline = o.baseline === undefined ? undefined : checkoutBaseline(o.baseline);
  const settings: Settings = { ...o.settings, ...(baseline === undefined ? {} : { baselineRoot: baseline.root }) };
  try {
    if (needsPostgres(o.systems)) servers.pg = await PostgresServer.start();
    if (needsRedis(o.systems)) servers.redis = await RedisServer.start();
    for (let round = 0; round < o.rounds; round++)
      for (const workload of o.workloads)
        for (const system of rotate(o.systems, round)) {
          if (workload === 'crash' && NOT_DURABLE.includes(system)) {
            if (round === 0)
              process.stderr.write(`crash ${system}: skipped, it keeps nothing across a killed process\n`);
            continue;
          }
          const load = await quiet(o.quietLoad, o.quietWaitS);
          process.stderr.write(`round ${round + 1}/${o.rounds} ${workload} ${system} (load ${load.toFixed(2)})\n`);
          const record: RunRecord = { round, system, workload, load };
          try {
            record.result = await runOne(system, workload, round, settings, servers);
          } catch (error) {
            record.error = (error as Error).message;
            process.stderr.write(`  failed: ${record.error}\n`);
          }
          records.push(record);
        }
  } finally {
    await stop();
    baseline?.remove();
  }
  const summary = summarize(records, o.systems, o.workloads);
  const table = renderTable(summary, o.systems);
  const s = o.settings;
  process.stdout.write(
    `\nPeer bench, ${o.rounds} round(s): burst ${s.jobs} jobs at concurrency ${s.concurrency}; steady ` +
      `${s.ratePerMinute}/min for ${s.seconds} s after ${s.warmUpSeconds} s unmeasured; crash: SIGKILL after half of ${s.jobs}, restart for up to ` +
      `${s.recoverSeconds} s. Cells: median (min–max) over rounds.\n\n${table}\n`,
  );
  const failed = records.filter((r) => r.error !== undefined);
  for (const r of failed) process.stdout.write(`failed: round ${r.round + 1} ${r.workload} ${r.system}: ${r.error}\n`);
  const out = o.out ?? join(RESULTS_DIR, `${started.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  const machine = { cpus: cpus().length, model: cpus()[0]?.model, node: process.version };
  writeFileSync(out, `${JSON.stringify({ started, options: o, machine, records, summary, table }, null, 2)}\n`);
  process.stdout.write(`\nresults: ${out}\n`);
  if (failed.length > 0) process.exitCode = 1;
}

await main();
