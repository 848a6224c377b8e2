import { describe, expect, test } from 'vitest';
import { createActor, transition, type AnyMachineSnapshot } from 'xstate';
import { contractDigestValue, verifyIntegrity } from '../../src/contract/digest.js';
import { validateAgainst, type SchemaName } from '../../src/contract/schemas.js';
import { generatedMachine, machineSpec, sampleEvent, sampleInputs, spec } from '../support/spec-fixtures.js';
import { testVectors, upstreamAvailable, upstreamDir, type VectorCase } from '../support/upstream.js';
import type { MachineId } from '../../src/spec/lifecycle-spec.js';

describe.skipIf(!upstreamAvailable)(`upstream test-vectors.json (${upstreamDir})`, () => {
  const vectors = upstreamAvailable ? testVectors() : { fixtures: {}, cases: [] as VectorCase[], digestRecipe: {} };
  const byKind = (kind: VectorCase['kind']) => vectors.cases.filter((c) => c.kind === kind);

  describe('pinned digests recompute exactly', () => {
    test.each(['definition.golden', 'receipt.golden'])('%s', (name) => {
      const fixture = vectors.fixtures[name] as Record<string, unknown>;
      const verdict = verifyIntegrity(fixture);
      expect(verdict.actual).toBe(verdict.expected);
      expect(verdict.valid).toBe(true);
    });

    test('the receipt pins the definition digest it was produced against', () => {
      const receipt = vectors.fixtures['receipt.golden'] as { definitionDigest: { value: string } };
      expect(receipt.definitionDigest.value).toBe(contractDigestValue(vectors.fixtures['definition.golden'] as Record<string, unknown>));
    });

    test('a one-character change breaks the digest', () => {
      const tampered = structuredClone(vectors.fixtures['definition.golden']) as { display: { name: string } };
      tampered.display.name += '!';
      expect(verifyIntegrity(tampered as unknown as Record<string, unknown>).valid).toBe(false);
    });
  });

  describe('schema cases', () => {
    test.each(byKind('schema').map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const verdict = validateAgainst(c.targetSchema as SchemaName, c.object);
      expect(verdict.valid ? 'accept' : 'reject', verdict.problems.join('; ')).toBe(c.expected);
    });

    test('every event of the golden occurrence changefeed validates', () => {
      for (const event of vectors.fixtures['event.occurrence.sequence'] as unknown[]) {
        expect(validateAgainst('event-envelope.schema.json', event).problems).toEqual([]);
      }
    });
  });

  describe('state-machine cases', () => {
    test.each(byKind('stateMachine').map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const id = c.machine as MachineId;
      const { to, on } = c.attemptedTransition as { to: string; on: string };
      expect(machineSpec(id).terminal).toContain(c.fromState);
      expect(machineSpec(id).transitions.filter((t) => t.from === c.fromState)).toEqual([]);
      const machine = generatedMachine(id);
      const context = createActor(machine, { input: sampleInputs[id] }).getSnapshot().context;
      const terminal: AnyMachineSnapshot = machine.resolveState({ value: c.fromState as string, context });
      for (const actor of spec.actors) {
        const event = sampleEvent(on, actor);
        expect(terminal.can(event), `${on} from ${actor}`).toBe(false);
        expect(transition(machine, terminal, event as never)[0]).toBe(terminal);
      }
      expect(c.expected).toBe('reject');
      expect(to).not.toBe(c.fromState);
    });
  });
});
