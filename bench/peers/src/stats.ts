// Quantiles and the across-rounds summary (median, min, max).
import type { Quantiles } from './protocol.js';

/** The q-quantile (nearest rank) of a series; NaN when empty. */
export function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

export function quantiles(values: number[]): Quantiles {
  return { p50: percentile(values, 0.5), p95: percentile(values, 0.95), samples: values.length };
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  rounds: number;
}

/** Median (mean of the middle two for an even count), min and max of one measure over rounds. */
export function spread(values: number[]): Spread {
  const xs = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (xs.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, rounds: 0 };
  const mid = Math.floor(xs.length / 2);
  const median = xs.length % 2 === 1 ? xs[mid]! : (xs[mid - 1]! + xs[mid]!) / 2;
  return { median, min: xs[0]!, max: xs.at(-1)!, rounds: xs.length };
}
