import { describe, expect, test } from 'vitest';
import { parseLifecycleSpec, SpecFileError } from '../../src/spec/lifecycle-spec.js';
import { spec, specCopy } from '../support/spec-fixtures.js';

describe('state-machines.json', () => {
  test('validates against state-machines.schema.json', () => {
    expect(() => parseLifecycleSpec(JSON.stringify(spec))).not.toThrow();
  });

  test('holds the four contract machines with 13/28/8/15 transitions', () => {
    const counts = Object.fromEntries(spec.machines.map((m) => [m.id, m.transitions.length]));
    expect(counts).toEqual({ 'definition.v1': 13, 'occurrence.v1': 28, 'run.v1': 8, 'attempt.v1': 15 });
  });

  test('holds the ten contract invariants by id', () => {
    expect(spec.invariants.map((i) => i.id)).toEqual([
      'adoption-before-side-effects',
      'one-fence-one-run',
      'one-attempt-one-session',
      'terminal-no-regress',
      'no-evidence-no-success',
      'cancellation-is-a-request',
      'retry-new-attempt',
      'ambiguous-never-auto-retried',
      'revision-pins-history',
      'tombstone-preserves-history',
    ]);
  });

  test('names the declared states of each machine in the contract order', () => {
    const states = Object.fromEntries(spec.machines.map((m) => [m.id, m.states]));
    expect(states['definition.v1']).toEqual(['draft', 'paused', 'active', 'disabled', 'invalid', 'tombstoned']);
    expect(states['run.v1']).toEqual([
      'accepted',
      'running',
      'succeeded',
      'failed',
      'cancelled',
      'timed_out',
      'ambiguous',
    ]);
    expect(spec.machines.find((m) => m.id === 'occurrence.v1')?.terminal).toEqual([
      'succeeded',
      'failed',
      'cancelled',
      'timed_out',
      'skipped',
      'superseded',
    ]);
  });

  test('refuses malformed JSON with a clear message', () => {
    expect(() => parseLifecycleSpec('{"machines": [', 'broken.json')).toThrow(
      /broken.json is not a valid lifecycle spec:\n {2}\(root\): not valid JSON/,
    );
  });

  test('refuses an unknown actor, naming the path', () => {
    const broken = specCopy();
    broken.machines[1]!.transitions[0]!.actor = 'operator' as never;
    expect(() => parseLifecycleSpec(JSON.stringify(broken))).toThrow(
      /\/machines\/1\/transitions\/0\/actor: must be equal to one of the allowed values/,
    );
  });

  test('refuses unknown fields, naming the field', () => {
    const broken = specCopy() as unknown as { machines: Array<Record<string, unknown>> };
    broken.machines[0]!.timeout = 5;
    const error = (() => {
      try {
        parseLifecycleSpec(JSON.stringify(broken));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(SpecFileError);
    expect((error as SpecFileError).problems).toContain("/machines/0: must NOT have additional properties 'timeout'");
  });

  test('refuses a guard without its contract text', () => {
    const broken = specCopy() as unknown as {
      machines: Array<{ transitions: Array<{ guard?: Record<string, unknown> }> }>;
    };
    delete broken.machines[0]!.transitions[0]!.guard!.text;
    expect(() => parseLifecycleSpec(JSON.stringify(broken))).toThrow(
      /\/machines\/0\/transitions\/0\/guard: must have required property 'text'/,
    );
  });
});
