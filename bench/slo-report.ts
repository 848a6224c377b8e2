// The SLO bench's reports: the slo.measured.v1-shaped headline (validated against upstream's schema) and every
// cell beside it in a .cells.json.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { arrivalMeasures } from './slo-arrivals-run.js';
import type { ArrivalsResult } from './slo-arrivals.js';
import type { CellResult } from './slo-cell.js';
import type { ScaleOutResults } from './scale-out/measure.js';

export interface Gate {
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

/** What the run measured, and where the reports go. */
export interface ReportInput {
  gates: Gate[];
  sloDir: string;
  out: string;
  measuredByCell: Array<{ cell: CellResult; measures: Map<string, number> }>;
  arrivals: ArrivalsResult[];
  scaleOut: ScaleOutResults | undefined;
  scaleDue: number;
}

/** Writes the headline report and the .cells.json beside it. */
export function writeReports({ gates, sloDir, out, measuredByCell, arrivals, scaleOut, scaleDue }: ReportInput): void {
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
    ...[...(scaleOut ?? [])].map(([configuration, runs]) => ({
      cell: 'scale-out',
      configuration,
      due: scaleDue,
      runs,
    })),
  ];
  writeFileSync(out.replace(/\.json$/, '.cells.json'), `${JSON.stringify(cells, null, 2)}\n`);
  console.log(
    `\nreport: ${out} (slo.measured.v1 shape; artifactDigest is zeros: the bench measures the working tree, not a packed release)`,
  );
}
