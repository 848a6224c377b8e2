// The daemon's added cost on the arrivals cell, measured side by side in one run: each round runs every store's
// cell in-process and through the daemon (`--daemon`), alternating which goes first, so the machine's drift
// within a run falls on both alike. Prints medians over the rounds per variant and their ratio.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ArrivalsResult } from './slo-arrivals.js';
import { runArrivals, type ArrivalsRun } from './slo-arrivals-run.js';
import { table } from './stats.js';

export interface SideBySideOptions {
  stores: Array<'json' | 'sqlite'>;
  rounds: number;
  seconds: number;
  idleSettleS?: number;
  buildDir: string;
  /** Where every round's results go (JSON). */
  out: string;
  /** Runs one cell; the arrivals cell process by default (tests and smoke runs may pass their own). */
  run?: (run: ArrivalsRun) => ArrivalsResult;
}

/** What the side-by-side table compares, per run. */
const MEASURES: Array<[string, string, (r: ArrivalsResult) => number]> = [
  ['claim p50', 'ms', (r) => r.latencyMs.claim.p50],
  ['claim.latency.p95', 'ms', (r) => r.latencyMs.claim.p95],
  ['dispatch.latency.p95', 'ms', (r) => r.latencyMs.dispatch.p95],
  ['start p50', 'ms', (r) => r.latencyMs.start.p50],
  ['start.latency.p95', 'ms', (r) => r.latencyMs.start.p95],
  ['settle p50', 'ms', (r) => r.latencyMs.settle.p50],
  ['scheduler.pass.duration.p95', 'ms', (r) => r.passMs.p95],
  ['queue.depth.p95', 'requests', (r) => r.queueDepth.p95],
  ['succeeded per minute', '/min', (r) => r.succeededPerMinute],
  ['cpu.load p50', '% core', (r) => r.cpuLoadPercent.p50],
  ['cpu.load.p95', '% core', (r) => r.cpuLoadPercent.p95],
  ['cpu.idle', '% core', (r) => r.cpuIdlePercent],
  ['memory.load.p95', 'MB', (r) => r.rssLoadMb.p95],
  ['memory.idle', 'MB', (r) => r.rssIdleMb],
];

export interface Paired {
  store: 'json' | 'sqlite';
  inProcess: ArrivalsResult[];
  daemon: ArrivalsResult[];
}

/** Runs the rounds: in round r, odd rounds start in-process and even ones through the daemon, per store. */
export function runRounds(options: SideBySideOptions): Paired[] {
  const run = options.run ?? runArrivals;
  const paired = options.stores.map((store): Paired => ({ store, inProcess: [], daemon: [] }));
  for (let round = 1; round <= options.rounds; round++) {
    console.error(`  round ${round} of ${options.rounds}`);
    for (const p of paired) {
      const order = round % 2 === 1 ? [false, true] : [true, false];
      for (const daemon of order) {
        const result = run({
          store: p.store,
          daemon,
          seconds: options.seconds,
          buildDir: options.buildDir,
          ...(options.idleSettleS === undefined ? {} : { idleSettleS: options.idleSettleS }),
        });
        (daemon ? p.daemon : p.inProcess).push(result);
      }
    }
  }
  return paired;
}

/** The middle value; with an even number of rounds, the mean of the middle two. */
function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
const rounds = (xs: number[]) => xs.map((x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1))).join(' / ');

/** The table: per store and measure, each variant's median over the rounds, the ratio, and every round's value. */
export function sideBySideTable(paired: Paired[]): string {
  const rows: Array<Array<string | number>> = [];
  for (const p of paired) {
    for (const [measure, unit, of] of MEASURES) {
      const a = p.inProcess.map(of);
      const b = p.daemon.map(of);
      rows.push([
        `${p.store} arrivals`,
        measure,
        unit,
        median(a),
        median(b),
        median(b) / median(a),
        rounds(a),
        rounds(b),
      ]);
    }
    const refused = (rs: ArrivalsResult[]) =>
      rs.reduce((n, r) => n + Object.values(r.refused).reduce((x, y) => x + y, 0), 0);
    rows.push([
      `${p.store} arrivals`,
      'info: requests / refused (all rounds)',
      'requests',
      p.inProcess.reduce((n, r) => n + r.requested, 0),
      p.daemon.reduce((n, r) => n + r.requested, 0),
      '-',
      `${refused(p.inProcess)} refused`,
      `${refused(p.daemon)} refused`,
    ]);
  }
  return table(
    [
      'cell',
      'measure',
      'unit',
      'in-process (median)',
      'daemon (median)',
      'ratio',
      'in-process rounds',
      'daemon rounds',
    ],
    rows,
  );
}

/** `npm run bench -- --cells arrivals --daemon-side-by-side`: the rounds, the table, and every result as JSON. */
export function sideBySide(options: SideBySideOptions): void {
  console.error(
    `daemon side by side: ${options.stores.join(', ')} arrivals, ${options.rounds} rounds of ${options.seconds} s per variant`,
  );
  const paired = runRounds(options);
  console.log(sideBySideTable(paired));
  mkdirSync(dirname(options.out), { recursive: true });
  writeFileSync(
    options.out,
    `${JSON.stringify({ rounds: options.rounds, seconds: options.seconds, paired }, null, 2)}\n`,
  );
  console.log(`\nevery round: ${options.out} (ratio = daemon median / in-process median)`);
}
