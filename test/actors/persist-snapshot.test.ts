import { getShortestPaths } from '@xstate/graph';
import { describe, expect, test, vi } from 'vitest';
import { createActor, createMachine, type AnyMachineSnapshot } from 'xstate';
import { persistSnapshot } from '../../src/actors/entity-transition.js';
import { extensionSpec, machineIds, permissiveMachine, sampleEvents, sampleInputs } from '../support/spec-fixtures.js';
import type { AnyMachineId } from '../support/spec-fixtures.js';

const everyMachine: AnyMachineId[] = [...machineIds, ...extensionSpec.machines.map((m) => m.id)];

/** XState's own persisted form, without the members it leaves undefined: what persistSnapshot must equal. */
function xstatePersisted(machine: ReturnType<typeof permissiveMachine>, snapshot: AnyMachineSnapshot): object {
  const persisted = machine.getPersistedSnapshot(snapshot) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(persisted).filter(([, member]) => member !== undefined));
}

describe('the persisted snapshot equals XState getPersistedSnapshot', () => {
  test.each(everyMachine)('%s: on every state @xstate/graph reaches, members and their order', (id) => {
    const machine = permissiveMachine(id);
    // Keyed by the edge that entered a state (as test/spec/paths.test.ts does): a path to every edge, and finite
    // where a machine's context counts (attempts, holds).
    const paths = getShortestPaths(machine, {
      input: sampleInputs[id] as never,
      events: sampleEvents(id),
      serializeState: (snapshot, event, previous) =>
        `${previous === undefined ? '' : String((previous as AnyMachineSnapshot).value)} --${event?.type ?? 'init'}--> ${String((snapshot as AnyMachineSnapshot).value)}`,
    });
    const reached = new Set<string>();
    const generic = vi.spyOn(machine, 'getPersistedSnapshot');
    for (const path of paths) {
      for (const step of path.steps) {
        const snapshot = step.state as AnyMachineSnapshot;
        reached.add(String(snapshot.value));
        generic.mockClear();
        const ours = persistSnapshot(machine, snapshot);
        // The flat lifecycle machines never need XState's generic walk.
        expect(generic).not.toHaveBeenCalled();
        const theirs = xstatePersisted(machine, snapshot);
        expect(ours).toEqual(theirs);
        expect(Object.keys(ours)).toEqual(Object.keys(theirs));
        expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs));
        // Shared, not copied: the store copies or freezes what it is handed.
        expect(ours.context).toBe(snapshot.context);
      }
    }
    expect(reached.size).toBeGreaterThanOrEqual(3);
  });

  test('a machine that is not flat falls back to XState: history and output are kept', () => {
    const nested = createMachine({
      id: 'nested',
      initial: 'outer',
      states: {
        outer: {
          initial: 'a',
          states: { a: { on: { NEXT: 'b' } }, b: {}, hist: { type: 'history' } },
          on: { FINISH: 'finished' },
        },
        finished: { type: 'final' },
      },
      output: { answer: 42 },
    });
    const actor = createActor(nested).start();
    actor.send({ type: 'NEXT' });
    const mid = actor.getSnapshot();
    expect(persistSnapshot(nested, mid)).toEqual(xstatePersisted(nested, mid));
    expect(persistSnapshot(nested, mid).value).toEqual({ outer: 'b' });
    actor.send({ type: 'FINISH' });
    const done = actor.getSnapshot();
    const persisted = persistSnapshot(nested, done);
    expect(persisted).toEqual(xstatePersisted(nested, done));
    expect(persisted.output).toEqual({ answer: 42 });
    expect(Object.keys(persisted)).toEqual(Object.keys(xstatePersisted(nested, done)));
  });
});
