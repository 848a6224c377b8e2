import { describe, expect, test } from 'vitest';
import { checkSpecSoundness, specProblems } from '../../src/spec/soundness.js';
import { machineSpec, spec, specCopy } from '../support/spec-fixtures.js';

describe('static proofs over the spec', () => {
  test.each(checkSpecSoundness(spec).map((c) => [c.check, c.problems] as const))('%s', (_check, problems) => {
    expect(problems).toEqual([]);
  });

  test('a transition out of a terminal state is named', () => {
    const broken = specCopy();
    machineSpec('run.v1', broken).transitions.push({
      from: 'succeeded',
      to: 'running',
      on: 'attempt_started',
      actor: 'dispatcher',
    });
    expect(specProblems(broken)).toContain(
      "run.v1: no transition leaves a terminal state: run.v1 succeeded -> running on attempt_started (dispatcher) leaves terminal state 'succeeded'",
    );
  });

  test('a transition to an undeclared state is named', () => {
    const broken = specCopy();
    machineSpec('attempt.v1', broken).transitions.push({
      from: 'observing',
      to: 'paused',
      on: 'pause',
      actor: 'worker',
    });
    expect(specProblems(broken)).toContain(
      "attempt.v1: declared endpoints: attempt.v1 observing -> paused on pause (worker): target 'paused' is not a declared state",
    );
  });

  test('an unreachable state and a dead end are named', () => {
    const broken = specCopy();
    const definition = machineSpec('definition.v1', broken);
    definition.states.push('archived');
    definition.transitions = definition.transitions.filter((t) => t.from !== 'invalid');
    const problems = specProblems(broken);
    expect(problems).toContain(
      "definition.v1: every state reachable from the initial state: state 'archived' is unreachable from 'draft'",
    );
    expect(problems).toContain(
      "definition.v1: every non-terminal state can reach a terminal state: state 'invalid' cannot reach any terminal state",
    );
    expect(problems).toContain(
      "definition.v1: terminal list equals the states without outgoing transitions: state 'invalid' has no outgoing transition but is not terminal",
    );
  });

  test('an unguarded alternative that would shadow another is named', () => {
    const broken = specCopy();
    const occurrence = machineSpec('occurrence.v1', broken);
    const settled = occurrence.transitions.find((t) => t.from === 'running' && t.to === 'failed');
    delete settled!.guard;
    expect(specProblems(broken)).toContain(
      'occurrence.v1: alternatives on one event are all guarded: occurrence.v1 running -> failed on run_settled (dispatcher) is unguarded but shares its event with another transition',
    );
  });

  test('a guard id reused with different text is named', () => {
    const broken = specCopy();
    const retry = machineSpec('occurrence.v1', broken).transitions.find(
      (t) => t.from === 'running' && t.on === 'operator_retry',
    );
    retry!.guard!.text = 'something else';
    expect(specProblems(broken)).toContain(
      "a guard id names one guard text: occurrence.v1 running -> planned on operator_retry (command_handler): guard 'operatorRetryAllowed' is reused with different text",
    );
  });
});
