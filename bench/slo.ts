// The SLO bench: every applicable upstream release-gate measure for the JSON and SQLite stores at growing
// history sizes, each cell in its own process, with two baselines measured in the same run (bench/slo-baselines.ts):
//   XState ceiling  restore + transition() of the exact transitions the engine committed, in memory
//   fsync floor     write + fsync appends of the bytes the engine wrote per commit
// Prints a table and writes a slo.measured.v1-shaped report (default bench/results/slo.measured.json).
// Run: npm run bench [-- --quick] [-- --out FILE] [-- --cells burst,arrivals,scale-out]; see bench/README.md.
// The daemon's added cost: npm run bench -- --cells arrivals --daemon-side-by-side [--rounds 3] [--arrival-seconds 30]
// The scale-out cells (1 engine on SQLite, 1/2/4 engine processes on one PostgreSQL): bench/scale-out/measure.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { missingServerBinaries } from '../test/support/postgres-cluster.js';
import { arrivalMeasures, runArrivals } from './slo-arrivals-run.js';
import { fsyncFloor, xstateCeiling } from './slo-baselines.js';
import { writeReports, type Gate } from './slo-report.js';
import { measureScaleOut, SCALE_OUT_HEADER, scaleOutRows, type ScaleOutResults } from './scale-out/measure.js';
import type { CellResult } from './slo-cell.js';
import { sideBySide } from './slo-side-by-side.js';
import { table } from './stats.js';
import type { CellStoreKind } from './slo-store.js';

interface Cell {
  store: CellStoreKind;
  history: number;
  definitions: number;
  /** Measured hours; 0 = definitions and restart only (the 10k-definition recovery figure). */
  hours?: number;
  /** Retention window (hours) and unmeasured hours that fill it first: the store's steady-state growth. */
  retentionHours?: number;
  warmupHours?: number;
}

const quick = process.argv.includes('--quick');
const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
const out = option('out') ?? join('bench', 'results', 'slo.measured.json');
/** `--cells burst,arrivals,scale-out` (default all three): which kinds of cell run. */
const CELL_KINDS = ['burst', 'arrivals', 'scale-out'];
const cellKinds = new Set((option('cells') ?? CELL_KINDS.join(',')).split(','));
for (const kind of cellKinds)
  if (!CELL_KINDS.includes(kind)) throw new Error(`--cells: ${kind} is not one of ${CELL_KINDS.join(', ')}`);
/** `--daemon-side-by-side`: the arrivals cells in-process and through the daemon, interleaved over `--rounds`. */
const daemonSideBySide = process.argv.includes('--daemon-side-by-side');
if (daemonSideBySide && (cellKinds.has('burst') || cellKinds.has('scale-out')))
  throw new Error('--daemon-side-by-side runs the arrivals cells only: add --cells arrivals');
const ROUNDS = Number(option('rounds') ?? '3');
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds: ${option('rounds')} is not a whole number ≥ 1`);

/**
 * The SQLite cells carry 1,000 definitions (the upstream restart gate's size). The JSON store rewrites its
 * whole snapshot on every fold and its cell process holds the seeded history in memory while seeding (its RSS
 * grows with the history: see bench/README.md), so its cells carry 100 definitions and stop at 10k history.
 */
const CELLS: Cell[] = quick
  ? [
      { store: 'json', history: 1_000, definitions: 100 },
      { store: 'sqlite', history: 1_000, definitions: 200 },
      { store: 'sqlite', history: 0, definitions: 200, hours: 2, retentionHours: 1, warmupHours: 2 },
      { store: 'postgres', history: 1_000, definitions: 200 },
    ]
  : [
      { store: 'json', history: 1_000, definitions: 100 },
      { store: 'json', history: 10_000, definitions: 100 },
      { store: 'sqlite', history: 0, definitions: 10_000, hours: 0 },
      { store: 'sqlite', history: 1_000, definitions: 1_000 },
      { store: 'sqlite', history: 10_000, definitions: 1_000 },
      { store: 'sqlite', history: 100_000, definitions: 1_000 },
      { store: 'json', history: 0, definitions: 100, hours: 3, retentionHours: 1, warmupHours: 2 },
      { store: 'sqlite', history: 0, definitions: 1_000, hours: 3, retentionHours: 1, warmupHours: 2 },
      { store: 'postgres', history: 1_000, definitions: 1_000 },
    ];
/** `--burst-stores json,sqlite,postgres` (default all): the burst cells' stores. */
const BURST_STORES = (option('burst-stores') ?? 'json,sqlite,postgres').split(',');

/**
 * The scale-out cells (bench/scale-out/measure.ts): `--scale-due` definitions due at one instant, worked by one
 * engine on SQLite and by 1, 2 and 4 engine processes on one PostgreSQL database, over `--scale-rounds` rounds.
 */
const SCALE_DUE = Number(option('scale-due') ?? (quick ? 100 : 300));
const SCALE_ROUNDS = Number(option('scale-rounds') ?? (quick ? 1 : 3));

/** Seconds of steady run-now arrivals per store at the upstream gate's rate (2,000 due occurrences/min). */
const ARRIVAL_SECONDS = Number(option('arrival-seconds') ?? (quick ? 10 : 30));
/** Seconds the idle arrivals daemon is watched for V8's memory reducer (`--idle-settle-s`; quick: none). */
const IDLE_SETTLE_S = option('idle-settle-s') ?? (quick ? '0' : undefined);
/** `--stores json,sqlite` (default both): the arrivals cells' stores. */
const ARRIVAL_STORES = (option('stores') ?? 'json,sqlite').split(',') as Array<'json' | 'sqlite'>;
for (const store of ARRIVAL_STORES)
  if (store !== 'json' && store !== 'sqlite') throw new Error(`--stores: ${store} is not json or sqlite`);

/**
 * Cells run as compiled JavaScript (tsconfig.bench.json → .bench-build/), as a daemon from `dist/` would:
 * under the tsx loader every process carries the loader's extra RSS (see bench/README.md) and compiles on the fly.
 */
const BUILD_DIR = '.bench-build';
function compileCells(): void {
  const started = performance.now();
  execFileSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.bench.json'], {
    stdio: 'inherit',
  });
  console.error(`  cells compiled to ${BUILD_DIR}/: ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

function runCell(cell: Cell): CellResult {
  const started = performance.now();
  const retention =
    cell.retentionHours === undefined
      ? []
      : ['--retention-hours', String(cell.retentionHours), '--warmup-hours', String(cell.warmupHours ?? 0)];
  const args = [
    '--store',
    cell.store,
    '--history',
    String(cell.history),
    '--definitions',
    String(cell.definitions),
    '--hours',
    String(cell.hours ?? 3),
    ...retention,
  ];
  const child = spawnSync(process.execPath, ['--expose-gc', join(BUILD_DIR, 'bench', 'slo-cell.js'), ...args], {
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
  });
  if (child.status !== 0) throw new Error(`cell ${cell.store}/${cell.history} failed:\n${child.stderr}`);
  const result = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as CellResult;
  const kind = cell.retentionHours === undefined ? `${cell.history} history` : `${cell.retentionHours} h retention`;
  console.error(
    `  ${cell.store} ${kind}, ${cell.definitions} definitions: ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return result;
}

/** Whether a burst cell is selected (`--burst-stores`) and can run here (PostgreSQL's server binaries for its cells). */
function burstCellRuns(cell: Cell): boolean {
  if (!BURST_STORES.includes(cell.store)) return false;
  const missing = cell.store === 'postgres' ? missingServerBinaries() : undefined;
  if (missing !== undefined) console.log(`postgres burst cell not run: ${missing}`);
  return missing === undefined;
}

/** The scale-out cells and their table, when selected and PostgreSQL's server binaries are here. */
async function scaleOutCells(): Promise<ScaleOutResults | undefined> {
  if (!cellKinds.has('scale-out')) return undefined;
  const missing = missingServerBinaries();
  if (missing !== undefined) {
    console.log(`\nscale-out cells not run: ${missing}`);
    return undefined;
  }
  console.error(`scale-out cells: ${SCALE_DUE} due at one instant, ${SCALE_ROUNDS} rounds`);
  const results = await measureScaleOut({
    rounds: SCALE_ROUNDS,
    due: SCALE_DUE,
    log: (line) => console.error(`  ${line}`),
  });
  console.log(
    `\nscale-out: ${SCALE_DUE} definitions due at one instant; one engine on SQLite, 1/2/4 engine processes on one PostgreSQL; median (min–max) of ${SCALE_ROUNDS} rounds`,
  );
  console.log(table(SCALE_OUT_HEADER, scaleOutRows(results, SCALE_DUE)));
  return results;
}

async function main(): Promise<void> {
  const sloDir = join(process.env.COVEN_UPSTREAM_DIR ?? join('..', 'shared', 'upstream'), 'conformance', 'slo');
  const gates = (JSON.parse(readFileSync(join(sloDir, 'slo.v1.json'), 'utf8')) as { measures: Gate[] }).measures;
  compileCells();
  const idle = IDLE_SETTLE_S === undefined ? {} : { idleSettleS: Number(IDLE_SETTLE_S) };
  if (daemonSideBySide) {
    const seconds = ARRIVAL_SECONDS;
    const sideOut = option('out') ?? join('bench', 'results', 'slo.daemon-side-by-side.json');
    return sideBySide({ stores: ARRIVAL_STORES, rounds: ROUNDS, seconds, buildDir: BUILD_DIR, out: sideOut, ...idle });
  }
  const burst = cellKinds.has('burst') ? CELLS.filter(burstCellRuns) : [];
  console.error(`coven-automata SLO bench: ${burst.length} burst cells${quick ? ' (quick)' : ''}`);
  const results = burst.map(runCell);
  const arrivals = cellKinds.has('arrivals')
    ? ARRIVAL_STORES.map((store) =>
        runArrivals({ store, daemon: false, seconds: ARRIVAL_SECONDS, buildDir: BUILD_DIR, ...idle }),
      )
    : [];

  const rows: Array<Array<string | number>> = [];
  const gateRows = (label: string, measures: Map<string, number>) => {
    for (const g of gates) {
      const value = measures.get(g.id);
      if (value === undefined) continue;
      const pass = g.direction === 'higher-is-better' ? value >= g.gate : value <= g.gate;
      const margin = g.direction === 'higher-is-better' ? value / g.gate : g.gate / value;
      rows.push([label, g.id, value, g.unit, g.gate, `${margin.toFixed(1)}x`, pass ? 'PASS' : 'FAIL']);
    }
  };
  const measuredByCell: Array<{ cell: CellResult; measures: Map<string, number> }> = [];
  for (const r of results) {
    const ceiling = xstateCeiling(r.transitions);
    const floor = r.commits === 0 ? Number.NaN : fsyncFloor(r.bytesPerCommit, 300);
    const commitsPerSecond = r.commits / (r.measuredMs / 1000);
    const transitionsPerSecond = r.transitions.length / (r.measuredMs / 1000);
    const measures = new Map<string, number>([
      ['definitions.per-minute', r.definitionsPerMinute],
      ['due-occurrences.per-minute', r.dueOccurrencesPerMinute],
      // Each occurrence's own latency; the batch's phase durations (the last occurrence's) are printed as info.
      ['planning.latency.p95', r.occurrenceLatencyMs.plan.p95],
      ['claim.latency.p95', r.occurrenceLatencyMs.claim.p95],
      ['dispatch.latency.p95', r.occurrenceLatencyMs.dispatch.p95],
      ['start.latency.p95', r.occurrenceLatencyMs.start.p95],
      ['scheduler.pass.duration.p95', r.phases.pass.p95],
      ['changefeed.throughput', r.changefeedEventsPerSecond],
      ['changefeed.replay-latency.p95', r.replayP95Ms],
      // MB/day at this cell's load: every definition due hourly, 24 slots a day each.
      ['store.growth.per-day', (r.bytesPerOccurrence * r.definitions * 24) / 1_048_576],
      ['restart.recovery-latency.p95', Math.max(...r.recoveryMs) / 1000],
      ['memory.idle', r.rssIdleMb],
      ['memory.load.p95', r.rssLoadedMb],
    ]);
    if (r.measuredOccurrences === 0) {
      // Restart-only cell: the other measures need executions it does not run.
      for (const id of [...measures.keys()])
        if (id !== 'definitions.per-minute' && id !== 'restart.recovery-latency.p95' && id !== 'memory.idle')
          measures.delete(id);
    }
    if (r.retentionHours > 0) {
      // Retention cell: what the store grows by once its window is full; latency comes from the other cells.
      for (const id of [...measures.keys()])
        if (id !== 'store.growth.per-day' && id !== 'due-occurrences.per-minute' && id !== 'memory.idle')
          measures.delete(id);
    }
    measuredByCell.push({ cell: r, measures });
    const label =
      r.retentionHours > 0
        ? `${r.store} retention ${r.retentionHours} h`
        : `${r.store} ${r.history / 1000}k${r.measuredOccurrences === 0 ? ` (${r.definitions / 1000}k defs, restart)` : ''}`;
    gateRows(label, measures);
    rows.push([
      label,
      'info: daemon loop with nothing due (pass + wake-up), median',
      r.idleLoopMs,
      'ms',
      '-',
      '-',
      `${r.definitions} definitions`,
    ]);
    if (r.measuredOccurrences === 0) continue;
    rows.push([
      label,
      'baseline: engine transitions/s vs XState ceiling',
      transitionsPerSecond,
      '/s',
      ceiling.perSecond,
      `${(transitionsPerSecond / ceiling.perSecond).toFixed(3)}x`,
      `${ceiling.agreed}/${ceiling.compared} agree`,
    ]);
    rows.push([
      label,
      'baseline: engine commits/s vs fsync floor',
      commitsPerSecond,
      '/s',
      floor,
      `${(commitsPerSecond / floor).toFixed(2)}x`,
      `${Math.round(r.bytesPerCommit)} B/commit`,
    ]);
    rows.push([
      label,
      'info: phase p50 plan/claim/dispatch ms',
      `${r.phases.plan.p50.toFixed(0)}/${r.phases.claim.p50.toFixed(0)}/${r.phases.dispatch.p50.toFixed(0)}`,
      'ms',
      '-',
      '-',
      `${r.measuredOccurrences} occ, ${r.commits} commits`,
    ]);
    rows.push([
      label,
      'info: batch p95 plan/claim/dispatch/start ms (last of N)',
      `${r.phases.plan.p95.toFixed(0)}/${r.phases.claim.p95.toFixed(0)}/${r.phases.dispatch.p95.toFixed(0)}/${r.phases.start.p95.toFixed(0)}`,
      'ms',
      '-',
      '-',
      `per occurrence p50 start ${r.occurrenceLatencyMs.start.p50.toFixed(0)} ms`,
    ]);
    rows.push([
      label,
      'info: plan phase of each measured burst ms',
      r.planPhaseMs.map((ms) => ms.toFixed(0)).join('/'),
      'ms',
      '-',
      '-',
      'in order; the engine ran one pass before the first',
    ]);
    rows.push([
      label,
      'info: store size, bytes per occurrence',
      r.storeBytes / 1_048_576,
      'MB',
      '-',
      '-',
      `${Math.round(r.bytesPerOccurrence)} B/occ${r.retentionHours > 0 ? `, ${r.compacted} compacted in the measured hours` : ''}`,
    ]);
    rows.push([
      label,
      'info: idle RSS inside the cell (harness + heap high-water)',
      r.rssInCellIdleMb,
      'MB',
      '-',
      '-',
      'memory.idle is a fresh daemon on the same store',
    ]);
  }
  for (const a of arrivals) {
    const label = `${a.store} arrivals`;
    gateRows(label, arrivalMeasures(a));
    const refused =
      Object.entries(a.refused)
        .map(([code, n]) => `${n} ${code}`)
        .join(', ') || 'none refused';
    rows.push([
      label,
      'info: latency p50 claim/dispatch/start/settle ms',
      `${a.latencyMs.claim.p50.toFixed(0)}/${a.latencyMs.dispatch.p50.toFixed(0)}/${a.latencyMs.start.p50.toFixed(0)}/${a.latencyMs.settle.p50.toFixed(0)}`,
      'ms',
      '-',
      '-',
      `${a.succeeded}/${a.requested} succeeded, ${refused}`,
    ]);
    rows.push([
      label,
      'info: succeeded per minute at 2000/min offered',
      a.succeededPerMinute,
      '/min',
      '-',
      '-',
      `${a.definitions} definitions, ${a.sessionMs} ms sessions`,
    ]);
    rows.push([
      label,
      "baseline: active runs vs Little's law (rate × session)",
      a.activeRuns.max,
      'runs',
      a.activeRuns.littleBaseline,
      `${(a.activeRuns.max / a.activeRuns.littleBaseline).toFixed(2)}x`,
      'settlement lag adds the rest',
    ]);
    rows.push([
      label,
      'info: RSS after the load, before V8 gave back its heap',
      a.rssAfterLoadMb,
      'MB',
      '-',
      '-',
      `memory.idle: after ${a.idleSettledS.toFixed(0)} s more idling`,
    ]);
    rows.push([
      label,
      'info: pass phase p50 plan/advance/dispatch/observe ms',
      `${a.phaseP50Ms.plan.toFixed(1)}/${a.phaseP50Ms.advance.toFixed(1)}/${a.phaseP50Ms.dispatch.toFixed(1)}/${a.phaseP50Ms.observe.toFixed(1)}`,
      'ms',
      '-',
      '-',
      `${a.passMs.samples} passes`,
    ]);
  }
  if (rows.length > 0) console.log(table(['cell', 'measure', 'value', 'unit', 'gate', 'margin', 'result'], rows));
  const scaleOut = await scaleOutCells();
  if (results.length === 0 || arrivals.length === 0) {
    console.log('\nreport not written: slo.measured.v1 binds both the burst and the arrivals cells');
    return;
  }

  writeReports({ gates, sloDir, out, measuredByCell, arrivals, scaleOut, scaleDue: SCALE_DUE });
}

await main();
