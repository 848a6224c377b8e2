import { describe, expect, test } from 'vitest';
import { checkMachineProperties, generatedMachines } from '../../../src/testkit/invariants/machine-properties.js';
import { propertySeed } from '../../support/property.js';

describe('machine-level invariants over every generated machine', () => {
  const seed = propertySeed('machine-level invariants');
  const results = checkMachineProperties(generatedMachines(), { runs: Number(process.env.FC_RUNS ?? 200), seed });

  test.each(results.map((r) => [`${r.machine}: ${r.property} (${r.invariant})`, r] as const))('%s', (_name, result) => {
    expect(result.problems).toEqual([]);
    expect(result.steps).toBeGreaterThan(0);
  });

  test('cover the five machine-level invariants of the issue', () => {
    expect(new Set(results.map((r) => r.invariant))).toEqual(
      new Set([
        'terminal-no-regress',
        'no-evidence-no-success',
        'ambiguous-never-auto-retried',
        'one-attempt-one-session',
      ]),
    );
  });
});
