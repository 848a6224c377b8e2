/** Latency summary of one measured series, in milliseconds. */
export interface Summary {
  samples: number;
  medianMs: number;
  p95Ms: number;
  perSecond: number;
}

export function summarize(latenciesMs: number[], totalMs = latenciesMs.reduce((a, b) => a + b, 0)): Summary {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { samples: sorted.length, medianMs: at(0.5), p95Ms: at(0.95), perSecond: (sorted.length / totalMs) * 1000 };
}

export async function timeEach(count: number, run: (i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await run(i);
    latencies.push(performance.now() - start);
  }
  return latencies;
}

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? format(c) : c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => String(r[i]).length)));
  return cells.map((r) => r.map((c, i) => String(c).padStart(widths[i]!)).join('  ')).join('\n');
}

function format(n: number): string {
  if (Number.isNaN(n)) return '-';
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** The q-quantile (nearest rank) of a series; NaN when empty. */
export function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}
