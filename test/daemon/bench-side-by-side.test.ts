import { describe, expect, test } from 'vitest';
import type { ArrivalsResult } from '../../bench/slo-arrivals.js';
import type { ArrivalsRun } from '../../bench/slo-arrivals-run.js';
import { runRounds, sideBySideTable } from '../../bench/slo-side-by-side.js';

/** A cell result whose latencies are `ms` and whose CPU is `cpu`: enough for the table's arithmetic. */
function result(store: 'json' | 'sqlite', ms: number, cpu: number): ArrivalsResult {
  const latency = { p50: ms, p95: ms * 2, p99: ms * 3, samples: 10 };
  return {
    store,
    ratePerMinute: 2000,
    seconds: 2,
    definitions: 200,
    sessionMs: 500,
    requested: 66,
    refused: {},
    succeeded: 66,
    succeededPerMinute: 1980,
    latencyMs: { claim: latency, dispatch: latency, start: latency, settle: latency },
    passMs: latency,
    phaseP50Ms: { plan: 1, advance: 1, dispatch: 1, observe: 1, retention: 0, checkpoint: 0 },
    queueDepth: { p95: 1, max: 2 },
    oldestEligibleAgeS: { p95: 0, max: 0 },
    activeRuns: { max: 20, littleBaseline: 16.7 },
    busyErrorsPerPassMax: 0,
    cpuLoadPercent: { p50: cpu, p95: cpu },
    cpuIdlePercent: 1,
    rssLoadMb: { p95: 100, max: 110 },
    rssIdleMb: 90,
    rssAfterLoadMb: 95,
    idleSettledS: 0,
  };
}

describe('the daemon side-by-side bench', () => {
  test('rounds alternate which variant runs first, per store, and the table gives medians and ratios', () => {
    const order: string[] = [];
    // The daemon variant's claim p50 is twice the in-process one in every round, with a different spread.
    const claims = { false: [10, 30, 20], true: [20, 60, 40] };
    const seen = { false: 0, true: 0 };
    const run = (r: ArrivalsRun) => {
      order.push(`${r.store}:${r.daemon ? 'daemon' : 'in-process'}`);
      const ms = claims[`${r.daemon}`][seen[`${r.daemon}`]++ % 3]!;
      return result(r.store, ms, r.daemon ? 30 : 20);
    };
    const paired = runRounds({ stores: ['sqlite'], rounds: 3, seconds: 2, buildDir: 'x', out: 'x', run });
    expect(order).toEqual([
      'sqlite:in-process',
      'sqlite:daemon',
      'sqlite:daemon',
      'sqlite:in-process',
      'sqlite:in-process',
      'sqlite:daemon',
    ]);
    const lines = sideBySideTable(paired).split('\n');
    const row = (measure: string) =>
      lines
        .find((l) => l.includes(` ${measure} `))!
        .trim()
        .split(/\s{2,}/);
    // cell, measure, unit, in-process median, daemon median, ratio, every round of each.
    expect(row('claim p50')).toEqual([
      'sqlite arrivals',
      'claim p50',
      'ms',
      '20.0',
      '40.0',
      '2.00',
      '10.0 / 30.0 / 20.0',
      '20.0 / 60.0 / 40.0',
    ]);
    expect(row('cpu.load.p95').slice(3, 6)).toEqual(['20.0', '30.0', '1.50']);
  });
});
