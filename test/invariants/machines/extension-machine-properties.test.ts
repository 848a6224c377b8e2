import { describe, expect, test } from 'vitest';
import { checkActorProperty } from '../../../src/testkit/invariants/machine-actors.js';
import {
  checkMachineProperties,
  extensionMachinesUnderTest,
  generatedMachines,
} from '../../../src/testkit/invariants/machine-properties.js';
import { propertySeed } from '../../support/property.js';

const options = { runs: Number(process.env.FC_RUNS ?? 200), seed: propertySeed('extension machine properties') };
const extensions = extensionMachinesUnderTest();

describe("machine-level properties over this project's extension machines", () => {
  // The evidence and ambiguity properties are about states the extension machines do not have; these two apply.
  const applicable = new Set(['no event leaves a terminal state', 'a refused event leaves the snapshot identical']);
  const results = checkMachineProperties(extensions, options).filter((r) => applicable.has(r.property));

  test('cover every extension machine with both terminal-no-regress properties', () => {
    expect(results.map((r) => `${r.machine}: ${r.property}`).sort()).toEqual(
      extensions.flatMap((e) => [...applicable].map((p) => `${e.id}: ${p}`)).sort(),
    );
  });

  test.each(results.map((r) => [`${r.machine}: ${r.property}`, r] as const))('%s', (_name, result) => {
    expect(result.problems).toEqual([]);
    expect(result.steps).toBeGreaterThan(0);
  });
});

describe('only the named actors move a machine, and only to the spec target', () => {
  test.each(checkActorProperty(extensions, options).map((r) => [r.machine, r] as const))('%s', (_id, result) => {
    expect(result.problems).toEqual([]);
    expect(result.steps).toBeGreaterThan(0);
  });

  test('holds for the contract machines too', () => {
    const results = checkActorProperty(generatedMachines(), { ...options, runs: 50 });
    expect(results.flatMap((r) => r.problems)).toEqual([]);
  });

  test('catches a machine that disagrees with its spec about who sends an event', () => {
    const [outbox] = extensions.filter((e) => e.id === 'x-coven-automata.outbox.v1');
    const lying = {
      ...outbox!,
      spec: {
        ...outbox!.spec,
        transitions: outbox!.spec.transitions.map((t) =>
          t.on === 'outbox_send_started' ? { ...t, actor: 'worker' as const } : t,
        ),
      },
    };
    const [result] = checkActorProperty([lying], options);
    expect(result!.problems.length).toBeGreaterThan(0);
  });
});
