import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { pureInitialTransition, pureTransition } from '../../src/actors/pure-transition.js';
import { permissiveMachine, sampleEvents, sampleInputs } from '../../src/testkit/invariants/machine-samples.js';
import type { MachineId } from '../../src/spec/lifecycle-spec.js';
import { propertyParameters } from '../support/property.js';

const MACHINES: MachineId[] = ['definition.v1', 'occurrence.v1', 'run.v1', 'attempt.v1'];
const view = (s: AnyMachineSnapshot) => ({ value: s.value, status: s.status, context: s.context });

describe('pure transitions on a reused inert scope', () => {
  test.each(MACHINES)('%s: every event sequence gives the snapshots XState transition() gives', (id) => {
    // The permissive machine lets guarded alternatives be chosen by the event, so walks reach every state.
    const machine = permissiveMachine(id);
    const events = sampleEvents(id);
    const reached = new Set<string>();
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...events), { maxLength: 12 }), (sequence) => {
        let ours = pureInitialTransition(machine, sampleInputs[id])[0];
        let theirs = initialTransition(machine, sampleInputs[id])[0] as AnyMachineSnapshot;
        expect(view(ours)).toEqual(view(theirs));
        for (const event of sequence) {
          const [next, actions] = pureTransition(machine, ours, event);
          ours = next;
          reached.add(String(ours.value));
          theirs = transition(machine, theirs, event as never)[0] as AnyMachineSnapshot;
          expect(view(ours)).toEqual(view(theirs));
          // The machines only assign; an executable action here would be a machine XState must run live.
          expect(actions).toEqual([]);
        }
      }),
      propertyParameters(`pure transition agrees with xstate on ${id}`, 200),
    );
    // The walks left the initial state for most of the machine, so the agreement is not about one state.
    expect(reached.size).toBeGreaterThanOrEqual(4);
  });

  test('a refused event leaves the snapshot as it was, like transition()', () => {
    const machine = permissiveMachine('occurrence.v1');
    const [initial] = pureInitialTransition(machine, sampleInputs['occurrence.v1']);
    const [next] = pureTransition(machine, initial, { type: 'runtime_started', actor: 'worker' } as never);
    expect(next.value).toBe(initial.value);
    expect(next.context).toEqual(initial.context);
  });
});
