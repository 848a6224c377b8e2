import type { FileReport } from './corpus.js';
import { summaryLine } from './corpus.js';
import type { VectorReport } from './vector-format.js';

/** A readable report: one line per vector, then every expectation that did not simply pass. */
export function formatReports(reports: VectorReport[]): string {
  const lines: string[] = [];
  for (const r of reports) {
    lines.push(`${r.status.toUpperCase().padEnd(11)} ${r.vectorId}  (${r.file})`);
    for (const e of r.expectations) {
      if (e.status === 'pass' && e.reason === undefined) continue;
      const detail =
        e.status === 'fail' ? ` expected ${JSON.stringify(e.expected)} observed ${JSON.stringify(e.observed)}` : '';
      lines.push(
        `    ${e.status.padEnd(11)} ${e.expectation}${e.reason === undefined ? '' : `: ${e.reason}`}${detail}`,
      );
    }
  }
  return lines.join('\n');
}

/** The file reports, crashes included, and the summary line last. */
export function formatFileReports(reports: FileReport[]): string {
  const lines: string[] = [];
  for (const f of reports) {
    if (f.status === 'crash') lines.push(`CRASH       ${f.file}: ${f.crash ?? ''}`);
    else lines.push(formatReports(f.vectors));
  }
  lines.push('', summaryLine(reports));
  return lines.join('\n');
}
