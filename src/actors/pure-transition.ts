import {
  createActor,
  type AnyActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
  type ExecutableActionsFrom,
} from 'xstate';

/**
 * XState's pure `transition()` and `initialTransition()` build a throwaway actor (and run the machine's
 * initial transition with no input) on every call: about a fifth of the engine's CPU in a dispatch burst,
 * much of it in the exception our context factories raise without input. The lifecycle machines are flat, assign-only
 * and never spawn, invoke or delay, so nothing in an inert scope outlives a call: one scope per machine,
 * reused, computes the same snapshots. (XState fixed this upstream only in v6: statelyai/xstate#5632.)
 */
const scopes = new WeakMap<AnyStateMachine, { scope: AnyActorScope; actions: unknown[] }>();

function inertScopeOf(machine: AnyStateMachine): { scope: AnyActorScope; actions: unknown[] } {
  let entry = scopes.get(machine);
  if (entry === undefined) {
    const self = createActor(machine);
    const actions: unknown[] = [];
    const scope: AnyActorScope = {
      self,
      id: '',
      sessionId: '',
      logger: () => {},
      defer: () => {},
      system: self.system,
      stopChild: () => {},
      emit: () => {},
      actionExecutor: (action) => void actions.push(action),
    };
    entry = { scope, actions };
    scopes.set(machine, entry);
  }
  entry.actions.length = 0;
  return entry;
}

/**
 * The next snapshot of `machine` for `event`, and the actions to execute, without a live actor: what
 * XState's `transition()` returns, at a fraction of its cost.
 *
 * @example
 * ```ts
 * const [next] = pureTransition(occurrenceMachine, snapshot, { type: 'eligibility_passed', actor: 'scheduler' });
 * ```
 */
export function pureTransition<M extends AnyStateMachine>(
  machine: M,
  snapshot: AnyMachineSnapshot,
  event: EventObject,
): [AnyMachineSnapshot, ExecutableActionsFrom<M>[]] {
  const { scope, actions } = inertScopeOf(machine);
  const next = machine.transition(snapshot as never, event as never, scope) as AnyMachineSnapshot;
  return [next, actions.splice(0) as ExecutableActionsFrom<M>[]];
}

/**
 * The initial snapshot of `machine` for `input`, and its entry actions: XState's `initialTransition()`
 * without the throwaway actor.
 *
 * @example
 * ```ts
 * const [initial] = pureInitialTransition(runMachine, {
 *   runId,
 *   occurrenceId,
 *   automationId,
 *   automationRevision: 1,
 *   fenceGeneration: 1,
 *   deadlineAt,
 * });
 * ```
 */
export function pureInitialTransition<M extends AnyStateMachine>(
  machine: M,
  input: unknown,
): [AnyMachineSnapshot, ExecutableActionsFrom<M>[]] {
  const { scope, actions } = inertScopeOf(machine);
  const initial = machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot;
  return [initial, actions.splice(0) as ExecutableActionsFrom<M>[]];
}
