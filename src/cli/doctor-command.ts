import { existsSync } from 'node:fs';
import { DaemonClient } from '../daemon/index.js';
import type { DoctorReport } from '../observability/doctor.js';
import { runDoctor } from '../observability/run-doctor.js';
import { CliError, parseRetention, withLocalEngine, type CliOptions } from './context.js';
import { storeLocation } from './store-location.js';
import type { ProgramKit } from './program-kit.js';

const SEVERITY_MARK = { error: 'ERROR', warning: 'WARN ', info: 'INFO ' } as const;

/** The report as an operator reads it: one line per finding, its subjects and safe next steps under it. */
export function formatDoctor(report: DoctorReport, source: string): string {
  const lines = [`doctor (${source}) at ${report.generatedAt}: ${report.ok ? 'ok' : 'NOT OK'}`];
  const c = report.counts;
  lines.push(
    `  due ${c.due}, eligible ${c.eligible}, claimed ${c.claimed}, running ${c.running}, ` +
      `recovery required ${c.recoveryRequired}, quarantined ${c.quarantined}`,
  );
  if (report.findings.length === 0) lines.push('  no findings');
  for (const f of report.findings) {
    lines.push(`${SEVERITY_MARK[f.severity]} ${f.code}: ${f.observed}`);
    if (f.subjectIds.length > 0) lines.push(`       subjects: ${f.subjectIds.join(', ')}`);
    for (const step of f.safeNextSteps) lines.push(`       next: ${step}`);
  }
  return lines.join('\n');
}

/**
 * The report for the store: asked of the daemon serving it, else read from the store opened here (no daemon:
 * no scheduler leads it, which the report says). A read never creates a store.
 */
async function doctorReport(options: CliOptions): Promise<{ report: DoctorReport; source: string }> {
  const location = storeLocation(options);
  const daemon = await DaemonClient.connect(location.anchor);
  if (daemon !== undefined) return { report: await daemon.get<DoctorReport>('/api/v1/doctor'), source: 'daemon' };
  if (location.kind === 'file' && !existsSync(location.file))
    throw new CliError(`no store at ${location.file} (doctor reads a store; it never creates one)`);
  const file = location.kind === 'file' ? location.file : location.shown;
  const retention = parseRetention(options.retention);
  const report = await withLocalEngine(options, (engine) =>
    runDoctor(engine, retention === undefined ? {} : { retention }),
  );
  return { report, source: file };
}

/**
 * `doctor`: the diagnostics.doctor.v1 report (`--json` prints it whole). Exit 1 when a finding is an error.
 *
 * @example
 * ```ts
 * registerDoctorCommand(kit); // coven-automata doctor [--json]
 * ```
 */
export function registerDoctorCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('doctor')
    .description('diagnose the store: scheduler, occurrences, runs, receipts, changefeed, retention (exit 1 on errors)')
    .action(
      run(async () => {
        const { report, source } = await doctorReport(opts());
        console.log(opts().json === true ? JSON.stringify(report, null, 2) : formatDoctor(report, source));
        return report.ok ? 0 : 1;
      }),
    );
}
