import { describe, expect, test } from 'vitest';
import { extensionMachines, lifecycleMachines } from '../../machines/index.js';
import { loadExtensionSpec, parseExtensionSpec } from '../../src/spec/extension-spec.js';
import { SpecFileError } from '../../src/spec/lifecycle-spec.js';
import { checkExtensionSoundness, extensionSpecProblems } from '../../src/spec/soundness.js';
import { renderMachineFiles } from '../../tools/machine-codegen.js';
import { extensionSpec, extensionSpecCopy, spec } from '../support/spec-fixtures.js';
import { expectConstantsMatchSpec } from '../support/typed-constants.js';

const machine = (id: string, from = extensionSpecCopy()) => {
  const m = from.machines.find((x) => x.id === id);
  if (m === undefined) throw new Error(`no machine ${id}`);
  return m;
};

const schemaProblems = (value: unknown): string[] => {
  try {
    parseExtensionSpec(JSON.stringify(value));
    return [];
  } catch (e) {
    if (e instanceof SpecFileError) return e.problems;
    throw e;
  }
};

describe('extension-machines.json (this project, not the contract)', () => {
  test('validates against its own schema and extends coven.automations.v1 with the contract actors', () => {
    const loaded = loadExtensionSpec();
    expect(loaded.schemaVersion).toBe('x-coven-automata.v1');
    expect(loaded.extends).toBe('coven.automations.v1');
    expect(loaded.actors).toEqual(spec.actors);
  });

  test('holds the outbox, run hold, quarantine and delivery machines', () => {
    expect(extensionSpec.machines.map((m) => [m.id, m.states, m.terminal])).toEqual([
      ['x-coven-automata.outbox.v1', ['pending', 'sending', 'done', 'cancelled'], ['done', 'cancelled']],
      ['x-coven-automata.run-hold.v1', ['clear', 'held', 'ended'], ['ended']],
      ['x-coven-automata.quarantine.v1', ['clear', 'quarantined', 'retired'], ['retired']],
      [
        'x-coven-automata.delivery.v1',
        ['none', 'pending', 'committed', 'failed', 'ambiguous'],
        ['committed', 'failed', 'ambiguous'],
      ],
    ]);
  });

  test('never lets a send be cancelled: only the dispatcher moves a launch out of sending', () => {
    const outbox = machine('x-coven-automata.outbox.v1');
    const fromSending = outbox.transitions.filter((t) => t.from === 'sending');
    expect(fromSending.map((t) => [t.to, t.actor])).toEqual([
      ['done', 'dispatcher'],
      ['pending', 'dispatcher'],
    ]);
  });

  test('refuses an actor outside the contract four and an event without its machine prefix', () => {
    const broken = extensionSpecCopy();
    broken.machines[0]!.transitions[0]!.actor = 'operator' as never;
    broken.machines[1]!.transitions[0]!.on = 'run_settled';
    const problems = schemaProblems(broken);
    expect(problems).toContain(
      '/machines/0/transitions/0/actor: must be equal to one of the allowed values ' +
        '["command_handler","scheduler","dispatcher","worker"]',
    );
    expect(problems.some((p) => p.startsWith('/machines/1/transitions/0/on: must match pattern'))).toBe(true);
  });

  test('refuses a machine id outside the x-coven-automata namespace', () => {
    const broken = extensionSpecCopy();
    broken.machines[2]!.id = 'quarantine.v1' as never;
    expect(schemaProblems(broken).some((p) => p.startsWith('/machines/2/id: must match pattern'))).toBe(true);
  });
});

describe('static proofs over the extension spec', () => {
  test.each(checkExtensionSoundness(extensionSpec, spec).map((c) => [c.check, c.problems] as const))(
    '%s',
    (_check, problems) => {
      expect(problems).toEqual([]);
    },
  );

  test('a transition out of a terminal state is named', () => {
    const broken = extensionSpecCopy();
    machine('x-coven-automata.outbox.v1', broken).transitions.push({
      from: 'cancelled',
      to: 'pending',
      on: 'outbox_send_unstarted',
      actor: 'dispatcher',
    });
    expect(extensionSpecProblems(broken)).toContain(
      "x-coven-automata.outbox.v1: no transition leaves a terminal state: x-coven-automata.outbox.v1 cancelled -> pending on outbox_send_unstarted (dispatcher) leaves terminal state 'cancelled'",
    );
  });

  test('a quarantine that can never end is named', () => {
    const broken = extensionSpecCopy();
    const q = machine('x-coven-automata.quarantine.v1', broken);
    q.transitions = q.transitions.filter((t) => t.from !== 'quarantined');
    const problems = extensionSpecProblems(broken);
    expect(problems).toContain(
      "x-coven-automata.quarantine.v1: every non-terminal state can reach a terminal state: state 'quarantined' cannot reach any terminal state",
    );
    expect(problems).toContain(
      "x-coven-automata.quarantine.v1: terminal list equals the states without outgoing transitions: state 'quarantined' has no outgoing transition but is not terminal",
    );
  });

  test('an unreachable state and an undeclared target are named', () => {
    const broken = extensionSpecCopy();
    const hold = machine('x-coven-automata.run-hold.v1', broken);
    hold.states.push('frozen');
    hold.transitions.push({ from: 'frozen', to: 'ended', on: 'hold_thawed', actor: 'scheduler' });
    hold.transitions.push({ from: 'held', to: 'limbo', on: 'hold_lost', actor: 'worker' });
    const problems = extensionSpecProblems(broken);
    expect(problems).toContain(
      "x-coven-automata.run-hold.v1: every state reachable from the initial state: state 'frozen' is unreachable from 'clear'",
    );
    expect(problems).toContain(
      "x-coven-automata.run-hold.v1: declared endpoints: x-coven-automata.run-hold.v1 held -> limbo on hold_lost (worker): target 'limbo' is not a declared state",
    );
  });

  test('an id that does not match its entity, and a reused contract event or entity, are named', () => {
    const broken = extensionSpecCopy();
    machine('x-coven-automata.quarantine.v1', broken).entity = 'run';
    machine('x-coven-automata.outbox.v1', broken).transitions[0]!.on = 'dispatch';
    const problems = extensionSpecProblems(broken, spec);
    expect(problems).toContain(
      "one extension machine per entity: machine 'x-coven-automata.quarantine.v1' does not match entity 'run'",
    );
    expect(problems).toContain(
      "extension names do not reuse contract names: machine 'x-coven-automata.quarantine.v1' reuses contract entity 'run'",
    );
    expect(problems).toContain(
      "extension names do not reuse contract names: x-coven-automata.outbox.v1 pending -> sending on dispatch (dispatcher) reuses contract event 'dispatch'",
    );
  });
});

describe('generated extension machines', () => {
  test('are exported in extensionMachines, apart from the contract lifecycleMachines', () => {
    expect(Object.keys(lifecycleMachines)).toEqual(spec.machines.map((m) => m.id));
    expect(Object.keys(extensionMachines)).toEqual(extensionSpec.machines.map((m) => m.id));
    for (const [id, m] of Object.entries(extensionMachines)) expect(m.id).toBe(id);
  });

  test('say in their header that they come from the extension spec, not the contract', () => {
    const files = renderMachineFiles(spec, extensionSpec);
    for (const file of [
      'machines/outbox.ts',
      'machines/run-hold.ts',
      'machines/quarantine.ts',
      'machines/delivery.ts',
      'machines/extension-states.ts',
    ]) {
      const content = files.get(file);
      expect(content, file).toBeDefined();
      expect(content, file).toContain('// spec/coven-automata/v1/extension-machines.json.');
      expect(content, file).toContain('NOT part of the coven.automations.v1 contract');
    }
    expect(files.get('machines/run.ts')).not.toContain('extension');
  });

  test.each(extensionSpec.machines.map((m) => [m.id, m] as const))(
    'typed constants of %s equal the extension spec lists',
    (_id, m) => {
      expectConstantsMatchSpec(m);
    },
  );
});
