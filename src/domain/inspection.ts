import { createActor, type AnyActorRef, type AnyStateMachine, type InspectionEvent } from 'xstate';
import { attemptMachine, occurrenceMachine, runMachine } from '../../machines/index.js';

/** One committed transition of an execution entity, as the inspection mirror replays it. */
export interface CommittedTransition {
  entity: 'occurrence' | 'run' | 'attempt';
  id: string;
  from: string;
  to: string;
  event: { type: string } & Record<string, unknown>;
  context: Record<string, unknown>;
}

const MACHINES: Record<CommittedTransition['entity'], AnyStateMachine> = {
  occurrence: occurrenceMachine as unknown as AnyStateMachine,
  run: runMachine as unknown as AnyStateMachine,
  attempt: attemptMachine as unknown as AnyStateMachine,
};

/**
 * Mirrors committed transitions into live XState actors (one per entity) so that an inspector — the
 * Stately inspector, or any `inspect` observer — sees `@xstate.actor`, `@xstate.event` and `@xstate.snapshot`
 * for every transition the engine made. The engine itself never depends on these actors: they are fed only
 * after each commit, and re-created from the stored snapshot if they ever fall out of step.
 */
export class InspectionMirror {
  private readonly actors = new Map<string, AnyActorRef>();

  constructor(private readonly inspect: (event: InspectionEvent) => void) {}

  apply(transitions: CommittedTransition[]): void {
    for (const t of transitions) {
      const key = `${t.entity}/${t.id}`;
      const machine = MACHINES[t.entity];
      const live = this.actors.get(key);
      if (live !== undefined && String((live.getSnapshot() as { value: unknown }).value) === t.from) {
        live.send(t.event);
        continue;
      }
      live?.stop();
      const snapshot = machine.getPersistedSnapshot(
        machine.resolveState({ value: t.to, context: structuredClone(t.context) }),
      );
      this.actors.set(key, createActor(machine, { id: key, snapshot, inspect: this.inspect }).start());
    }
  }

  stop(): void {
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
  }
}
