import { getShortestPaths } from '@xstate/graph';
import { describe, expect, test } from 'vitest';
import { transition, type AnyMachineSnapshot } from 'xstate';
import { machineIds, machineSpec, permissiveMachine, sampleEvents, sampleInputs } from '../support/spec-fixtures.js';

const stateOf = (s: AnyMachineSnapshot) => String(s.value);

describe.each(machineIds)('@xstate/graph paths over %s', (id) => {
  const m = machineSpec(id);
  const machine = permissiveMachine(id);
  const events = sampleEvents(id);
  // Keyed by the edge that entered a state, so a shortest path is found to every edge, not only every state.
  const paths = getShortestPaths(machine, {
    input: sampleInputs[id] as never,
    events,
    serializeState: (snapshot, event, previous) =>
      `${previous === undefined ? '' : stateOf(previous as AnyMachineSnapshot)} --${event?.type ?? 'init'}--> ${stateOf(snapshot as AnyMachineSnapshot)}`,
  });

  test('every spec transition lies on an enumerated shortest path', () => {
    const covered = new Set<string>();
    for (const path of paths) {
      const states = path.steps.map((s) => stateOf(s.state as AnyMachineSnapshot));
      for (let i = 1; i < path.steps.length; i++) {
        covered.add(`${states[i - 1]} --${path.steps[i]!.event.type}--> ${states[i]}`);
      }
    }
    const missing = m.transitions.map((t) => `${t.from} --${t.on}--> ${t.to}`).filter((edge) => !covered.has(edge));
    expect(missing).toEqual([]);
  });

  test('every declared state is reached by some path', () => {
    const reached = new Set(paths.map((p) => stateOf(p.state as AnyMachineSnapshot)));
    expect(m.states.filter((s) => !reached.has(s))).toEqual([]);
  });

  test('terminal states accept no event, from any actor', () => {
    const terminalPaths = paths.filter((p) => m.terminal.includes(stateOf(p.state as AnyMachineSnapshot)));
    expect(terminalPaths.length).toBeGreaterThan(0);
    for (const path of terminalPaths) {
      const snapshot = path.state as AnyMachineSnapshot;
      expect(snapshot.status).toBe('done');
      for (const event of events) {
        expect(snapshot.can(event), `${stateOf(snapshot)} accepts ${event.type} from ${event.actor}`).toBe(false);
        const [next] = transition(machine, snapshot, event as never);
        expect(next).toBe(snapshot);
      }
    }
  });
});
