import type { VectorReport } from './vector-format.js';

/** A readable per-file report: one line per vector, then every expectation that did not simply pass. */
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
  const count = (s: string) => reports.filter((r) => r.status === s).length;
  lines.push(
    '',
    `${reports.length} vectors: ${count('pass')} pass, ${count('differs')} differ by contract rule, ` +
      `${count('unsupported')} unsupported, ${count('fail')} fail`,
  );
  return lines.join('\n');
}
