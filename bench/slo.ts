// The SLO bench: every applicable upstream release-gate measure for the JSON and SQLite stores at growing
// history sizes, each cell in its own process, with two baselines measured in the same run:
//   XState ceiling  restore + transition() of the exact transitions the engine committed, in memory
//   fsync floor     write + fsync appends of the bytes the engine wrote per commit
// Prints a table and writes a slo.measured.v1-shaped report (default bench/results/slo.measured.json).
// Run: npm run bench [-- --quick] [-- --out FILE] [-- --cells burst,arrivals]; see bench/README.md.
// The daemon's added cost: npm run bench -- --cells arrivals --daemon-side-by-side [--rounds 3] [--arrival-seconds 30]
import { execFileSync, spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  fsyncSync,
  rmSync,
  writeFileSync,
  writeSync,
  readFileSync,
} from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { transition, type AnyStateMachine } from 'xstate';
import { attemptMachine, occurrenceMachine, runMachine } from '../machines/index.js';
import type { CommittedTransition } from '../src/domain/inspection.js';
import { arrivalMeasures, runArrivals } from './slo-arrivals-run.js';
import type { CellResult } from './slo-cell.js';
import { sideBySide } from './slo-side-by-side.js';
import { table } from './stats.js';

interface Cell {
  store: 'json' | 'sqlite';
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
/** `--cells burst,arrivals` (default both): which kinds of cell run. */
const cellKinds = new Set((option('cells') ?? 'burst,arrivals').split(','));
for (const kind of cellKinds)
  if (kind !== 'burst' && kind !== 'arrivals') throw new Error(`--cells: ${kind} is not burst or arrivals`);
/** `--daemon-side-by-side`: the arrivals cells in-process and through the daemon, interleaved over `--rounds`. */
const daemonSideBySide = process.argv.includes('--daemon-side-by-side');
if (daemonSideBySide && cellKinds.has('burst'))
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
    ];

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

const MACHINES: Record<CommittedTransition['entity'], AnyStateMachine> = {
  occurrence: occurrenceMachine as unknown as AnyStateMachine,
  run: runMachine as unknown as AnyStateMachine,
  attempt: attemptMachine as unknown as AnyStateMachine,
};

/** The in-memory ceiling: restore each committed transition's source state and take it again with transition(). */
function xstateCeiling(committed: CommittedTransition[]): { perSecond: number; agreed: number; compared: number } {
  // Creations ('none' → initial) are actor starts, not transitions; the rest are replayed.
  // A committed transition carries its target context; the source context is the entity's previous one.
  const previous = new Map<string, Record<string, unknown>>();
  const transitions: CommittedTransition[] = [];
  for (const t of committed) {
    const key = `${t.entity}/${t.id}`;
    const before = previous.get(key);
    if (t.from !== 'none' && before !== undefined) transitions.push({ ...t, context: before });
    previous.set(key, t.context);
  }
  let agreed = 0;
  const rounds = 3;
  const start = performance.now();
  for (let round = 0; round < rounds; round++) {
    for (const t of transitions) {
      const machine = MACHINES[t.entity];
      const before = machine.resolveState({ value: t.from, context: t.context });
      const [after] = transition(machine, before, t.event as never);
      if (round === 0 && String(after.value) === t.to) agreed++;
    }
  }
  return {
    perSecond: (transitions.length * rounds) / ((performance.now() - start) / 1000),
    agreed,
    compared: transitions.length,
  };
}

/** The durability floor: appends of `bytes` each followed by fsync, as fast as the disk allows. */
function fsyncFloor(bytes: number, appends: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-floor-'));
  const fd = openSync(join(dir, 'append.log'), 'a');
  const chunk = Buffer.alloc(Math.max(1, Math.round(bytes)), 0x61);
  const start = performance.now();
  for (let i = 0; i < appends; i++) {
    writeSync(fd, chunk);
    fsyncSync(fd);
  }
  const perSecond = appends / ((performance.now() - start) / 1000);
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
  return perSecond;
}

interface Gate {
  id: string;
  unit: string;
  direction: 'higher-is-better' | 'lower-is-better';
  gate: number;
}

function sourceCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return '0'.repeat(40);
  }
}

function main(): void {
  const sloDir = join(process.env.COVEN_UPSTREAM_DIR ?? join('..', 'shared', 'upstream'), 'conformance', 'slo');
  const gates = (JSON.parse(readFileSync(join(sloDir, 'slo.v1.json'), 'utf8')) as { measures: Gate[] }).measures;
  compileCells();
  const idle = IDLE_SETTLE_S === undefined ? {} : { idleSettleS: Number(IDLE_SETTLE_S) };
  if (daemonSideBySide) {
    const seconds = ARRIVAL_SECONDS;
    const sideOut = option('out') ?? join('bench', 'results', 'slo.daemon-side-by-side.json');
    return sideBySide({ stores: ARRIVAL_STORES, rounds: ROUNDS, seconds, buildDir: BUILD_DIR, out: sideOut, ...idle });
  }
  const burst = cellKinds.has('burst') ? CELLS : [];
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
  console.log(table(['cell', 'measure', 'value', 'unit', 'gate', 'margin', 'result'], rows));
  if (results.length === 0 || arrivals.length === 0) {
    console.log('\nreport not written: slo.measured.v1 binds both the burst and the arrivals cells');
    return;
  }

  // The report binds the largest SQLite cell (the profile's store) for throughput, growth, changefeed and
  // restart, and the SQLite arrivals cell (a daemon at the gate's rate) for per-occurrence latency, queue,
  // runs, CPU and memory. Every cell goes to the .cells.json beside it.
  const largest =
    [...measuredByCell]
      .reverse()
      .find((m) => m.cell.store === 'sqlite' && m.cell.measuredOccurrences > 0 && m.cell.retentionHours === 0) ??
    measuredByCell.at(-1)!;
  const steady = measuredByCell.find((m) => m.cell.store === 'sqlite' && m.cell.retentionHours > 0);
  const daemon = arrivals.find((a) => a.store === 'sqlite')!;
  // Growth is the steady state under retention (bounded growth over retention windows, upstream's hard gate),
  // when a retention cell ran; the largest cell's figure without retention stays in the table and .cells.json.
  const growth = steady?.measures.get('store.growth.per-day');
  const headline = {
    cell: largest.cell,
    measures: new Map([
      ...largest.measures,
      ...arrivalMeasures(daemon),
      ...(growth === undefined ? [] : ([['store.growth.per-day', growth]] as Array<[string, number]>)),
    ]),
  };
  const report = {
    measuredVersion: 1,
    environment: {
      cpu: `${cpus().length} vCPU (${cpus()[0]?.model ?? 'unknown'})`,
      memory: `${Math.round(totalmem() / 1_073_741_824)} GB`,
      disk: 'local (tmpdir)',
      os: `${process.platform} ${process.arch}`,
      store: `${headline.cell.store === 'sqlite' ? 'SQLite WAL' : 'JSON file'}, single store, one engine; ${headline.cell.definitions} definitions, ${headline.cell.history} historical occurrences; latency, queue, CPU and memory from ${daemon.ratePerMinute}/min run-now arrivals on ${daemon.definitions} definitions${steady === undefined ? '' : `; growth at steady state under a ${steady.cell.retentionHours} h retention window, ${steady.cell.definitions} definitions`}`,
    },
    artifact: { sourceCommit: sourceCommit(), artifactDigest: `sha256-${'0'.repeat(64)}` },
    measures: [...headline.measures].map(([id, value]) => ({
      id,
      value,
      unit: gates.find((g) => g.id === id)?.unit ?? '',
    })),
  };
  const validate = new Ajv2020({ allErrors: true }).compile(
    JSON.parse(readFileSync(join(sloDir, 'slo.measured.v1.schema.json'), 'utf8')) as object,
  );
  const valid = validate(report);
  const absent = gates.filter((g) => !headline.measures.has(g.id)).map((g) => g.id);
  console.log(
    `\nslo.measured.v1 schema: ${valid ? 'valid' : `INVALID ${JSON.stringify(validate.errors)}`}; measures absent: ${absent.length === 0 ? 'none' : absent.join(', ')}`,
  );
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  const cells = [
    ...measuredByCell.map((m) => ({
      cell: m.cell.retentionHours > 0 ? 'retention' : 'burst',
      store: m.cell.store,
      history: m.cell.history,
      definitions: m.cell.definitions,
      retentionHours: m.cell.retentionHours,
      measures: Object.fromEntries(m.measures),
    })),
    ...arrivals.map((a) => ({
      cell: 'arrivals',
      store: a.store,
      ratePerMinute: a.ratePerMinute,
      definitions: a.definitions,
      measures: Object.fromEntries(arrivalMeasures(a)),
      detail: a,
    })),
  ];
  writeFileSync(out.replace(/\.json$/, '.cells.json'), `${JSON.stringify(cells, null, 2)}\n`);
  console.log(
    `\nreport: ${out} (slo.measured.v1 shape; artifactDigest is zeros: the bench measures the working tree, not a packed release)`,
  );
}

main();
