// The table: rows are the workloads' measures, columns the systems, each cell the median over rounds with its
// min–max; under each measure, ratio rows give every coven column's median over each peer's.
import { BASELINES, COVENS, PEERS, type RunResult, type SystemName, type WorkloadName } from './protocol.js';
import { spread, type Spread } from './stats.js';

export interface RunRecord {
  round: number;
  system: SystemName;
  workload: WorkloadName;
  /** One-minute load average when the run began. */
  load: number;
  result?: RunResult;
  error?: string;
}

interface Measure {
  workload: WorkloadName;
  label: string;
  pick: (r: RunResult) => number | undefined;
  /** Counts (duplicates, …) get no ratio rows, a ratio of zeros saying nothing, and print as whole numbers. */
  ratio: boolean;
}

const measure = (workload: WorkloadName, label: string, pick: Measure['pick'], ratio = true): Measure => ({
  workload,
  label,
  pick,
  ratio,
});

export const MEASURES: Measure[] = [
  measure('burst', 'burst makespan (s)', (r) => (r.kind === 'burst' ? r.makespanMs / 1000 : undefined)),
  measure('burst', 'burst start p95 (ms)', (r) => (r.kind === 'burst' ? r.startMs.p95 : undefined)),
  measure('burst', 'burst CPU worker (s)', (r) => (r.kind === 'burst' ? r.cpuWorkerS : undefined)),
  measure('burst', 'burst CPU server (s)', (r) => (r.kind === 'burst' ? r.cpuServerS : undefined)),
  measure('burst', 'burst CPU worker+server (s)', (r) =>
    r.kind === 'burst' ? r.cpuWorkerS + r.cpuServerS : undefined,
  ),
  measure('steady', 'steady start p50 (ms)', (r) => (r.kind === 'steady' ? r.startMs.p50 : undefined)),
  measure('steady', 'steady start p95 (ms)', (r) => (r.kind === 'steady' ? r.startMs.p95 : undefined)),
  measure('steady', 'steady complete p50 (ms)', (r) => (r.kind === 'steady' ? r.completeMs.p50 : undefined)),
  measure('steady', 'steady complete p95 (ms)', (r) => (r.kind === 'steady' ? r.completeMs.p95 : undefined)),
  measure('steady', 'steady CPU worker (%)', (r) => (r.kind === 'steady' ? r.cpuWorkerPercent : undefined)),
  measure('steady', 'steady CPU server (%)', (r) => (r.kind === 'steady' ? r.cpuServerPercent : undefined)),
  measure(
    'steady',
    'steady completed of requested',
    (r) => (r.kind === 'steady' ? r.completed / r.requested : undefined),
    false,
  ),
  measure('crash', 'crash accepted before the kill', (r) => (r.kind === 'crash' ? r.accepted : undefined), false),
  measure('crash', 'crash executed at the kill', (r) => (r.kind === 'crash' ? r.executedAtKill : undefined), false),
  measure('crash', 'crash duplicates', (r) => (r.kind === 'crash' ? r.duplicates : undefined), false),
  measure('crash', 'crash never-run', (r) => (r.kind === 'crash' ? r.neverRun : undefined), false),
  measure('crash', 'crash unfinished', (r) => (r.kind === 'crash' ? r.unfinished : undefined), false),
  measure('crash', 'crash recovery (s)', (r) => (r.kind === 'crash' ? r.recoverS : undefined), false),
];

export type Summary = Record<string, Partial<Record<SystemName, Spread>>>;

export function summarize(records: RunRecord[], systems: SystemName[], workloads: WorkloadName[]): Summary {
  const summary: Summary = {};
  for (const m of MEASURES.filter((x) => workloads.includes(x.workload))) {
    summary[m.label] = {};
    for (const system of systems) {
      const values = records
        .filter((r) => r.system === system && r.workload === m.workload && r.result !== undefined)
        .map((r) => m.pick(r.result!))
        .filter((v): v is number => v !== undefined);
      summary[m.label]![system] = spread(values);
    }
  }
  return summary;
}

function format(n: number): string {
  if (Number.isNaN(n)) return '-';
  if (Number.isInteger(n)) return String(n);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

const cell = (s: Spread | undefined) =>
  s === undefined || s.rounds === 0
    ? '-'
    : s.rounds === 1
      ? format(s.median)
      : `${format(s.median)} (${format(s.min)}–${format(s.max)})`;

/** Whether a ratio row against `reference` has a cell for `system`: every coven against a peer, a store against its baseline. */
const comparable = (system: SystemName, reference: SystemName, covens: SystemName[]) =>
  BASELINES.includes(reference) ? `${system}-baseline` === reference : covens.includes(system) && system !== reference;

/** A markdown table (aligned, so it reads in a terminal too). */
export function renderTable(summary: Summary, systems: SystemName[]): string {
  const peers = systems.filter((s) => PEERS.includes(s));
  const covens = systems.filter((s) => COVENS.includes(s));
  const rows: string[][] = [];
  for (const m of MEASURES) {
    const line = summary[m.label];
    if (line === undefined) continue;
    rows.push([m.label, ...systems.map((s) => cell(line[s]))]);
    if (!m.ratio || covens.length === 0) continue;
    // With a baseline, the first reference rows are this engine against the baseline's.
    const references = [...systems.filter((s) => BASELINES.includes(s)), ...peers];
    for (const peer of references) {
      const base = line[peer]?.median ?? Number.NaN;
      rows.push([
        `  coven ÷ ${peer}`,
        ...systems.map((s) =>
          comparable(s, peer, covens) ? `${format((line[s]?.median ?? Number.NaN) / base)}×` : '',
        ),
      ]);
    }
  }
  const header = ['measure', ...systems];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const render = (r: string[]) =>
    `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [render(header), rule, ...rows.map(render)].join('\n');
}
