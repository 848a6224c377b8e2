import { describe, expect, test } from 'vitest';
import { attemptGuards } from '../../src/guards/attempt.js';
import { definitionGuards } from '../../src/guards/definition.js';
import { occurrenceGuards } from '../../src/guards/occurrence.js';
import { runGuards } from '../../src/guards/run.js';
import type { MachineId } from '../../src/spec/lifecycle-spec.js';
import { machineSpec } from '../support/spec-fixtures.js';

const catalogues: Record<MachineId, Record<string, unknown>> = {
  'definition.v1': definitionGuards,
  'occurrence.v1': occurrenceGuards,
  'run.v1': runGuards,
  'attempt.v1': attemptGuards,
};

describe.each(Object.keys(catalogues) as MachineId[])('guard catalogue of %s', (id) => {
  const specIds = new Set(machineSpec(id).transitions.flatMap((t) => (t.guard ? [t.guard.id] : [])));
  const implemented = new Set(Object.keys(catalogues[id]));

  test('implements every guard id the spec names', () => {
    expect([...specIds].filter((g) => !implemented.has(g))).toEqual([]);
  });

  test('implements nothing the spec does not use', () => {
    expect([...implemented].filter((g) => !specIds.has(g))).toEqual([]);
  });

  test('every implementation is a predicate', () => {
    for (const g of implemented) expect(typeof catalogues[id][g], g).toBe('function');
  });
});
