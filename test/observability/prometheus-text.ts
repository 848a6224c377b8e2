import { expect } from 'vitest';

/** Prometheus text format: `# HELP`/`# TYPE` lines and `name{labels} value` samples, nothing else. */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/i.exec(line);
    expect(match, `not a sample line: ${line}`).not.toBeNull();
    samples.set(match![1]!, Number(match![2]));
  }
  return samples;
}
