import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { ContractError } from '../contract/errors.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { pureInitialTransition, pureTransition } from './pure-transition.js';

/** What the store keeps for one lifecycle entity: its machine, persisted snapshot and contract attributes. */
export interface EntityRecord<TAttributes = Record<string, unknown>> {
  machineId: string;
  /** `machine.getPersistedSnapshot(...)`: the only place an entity's lifecycle state lives. */
  snapshot: { value: string; status: string; context: Record<string, unknown> } & Record<string, unknown>;
  attributes: TAttributes;
}

/**
 * The outcome of one committed lifecycle transition. `TState` is the machine's state union where the caller
 * knows the machine (the domain does, from the record kind); actors only know it is a string.
 */
export interface EntityTransition<TAttributes = Record<string, unknown>, TState extends string = string> {
  kind: string;
  id: string;
  from: TState;
  to: TState;
  event: EventObject & { actor?: string; now?: string };
  terminal: boolean;
  record: StoredRecord<EntityRecord<TAttributes>>;
  snapshot: AnyMachineSnapshot;
}

/** Rebuilds a snapshot for a live actor from a persisted one; a copy, because stored data is frozen. */
export function restoreSnapshot(machine: AnyStateMachine, persisted: EntityRecord['snapshot']): AnyMachineSnapshot {
  const copy = structuredClone(persisted);
  return machine.resolveState({ value: copy.value, context: copy.context });
}

/**
 * The persisted form of a snapshot, sharing its context (a store copies or freezes what it is given on put), and
 * without the members XState leaves undefined (`output` and `error` until the machine is done or fails): JSON
 * leaves them out anyway, and without them the record is plain data the SQL stores take without a copy.
 */
export function persistSnapshot(machine: AnyStateMachine, snapshot: AnyMachineSnapshot): EntityRecord['snapshot'] {
  if (isFlatSnapshot(snapshot)) {
    // The lifecycle machines are flat: no children, no history, no output or error. XState's own persisted form
    // of such a snapshot is exactly this (same members, same order; test/actors/persist-snapshot.test.ts walks
    // every generated machine to show it), built here without its generic walk of the context for actor refs,
    // which a context with no children cannot hold. The empty members are one shared frozen object.
    const { status, value, context } = snapshot;
    return { status, value, historyValue: EMPTY, context, children: EMPTY } as EntityRecord['snapshot'];
  }
  return withoutUndefined(machine.getPersistedSnapshot(snapshot)) as EntityRecord['snapshot'];
}

function isFlatSnapshot(snapshot: AnyMachineSnapshot): boolean {
  return (
    snapshot.output === undefined &&
    snapshot.error === undefined &&
    typeof snapshot.value === 'string' &&
    isEmpty(snapshot.children) &&
    isEmpty(snapshot.historyValue)
  );
}

function isEmpty(members: object): boolean {
  for (const _ in members) return false;
  return true;
}

/** A flat snapshot's always-empty `children` and `historyValue`: one frozen object, not two new ones per record. */
const EMPTY: Readonly<Record<string, never>> = Object.freeze({});

/** `value`'s members but those that are undefined. */
function withoutUndefined(value: object): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) if (member !== undefined) kept[key] = member;
  return kept;
}

/** Creates a lifecycle entity in its machine's initial state inside `tx`. Fails if the id exists. */
export async function createEntity<TAttributes>(
  tx: StoreTransaction,
  machine: AnyStateMachine,
  kind: string,
  id: string,
  input: unknown,
  attributes: TAttributes,
): Promise<StoredRecord<EntityRecord<TAttributes>>> {
  const [snapshot] = pureInitialTransition(machine, input);
  return tx.put<EntityRecord<TAttributes>>(
    kind,
    id,
    { machineId: machine.id, snapshot: persistSnapshot(machine, snapshot), attributes },
    { expectedVersion: null, handOver: true },
  );
}

export async function readEntity<TAttributes>(
  reader: StoreReader,
  kind: string,
  id: string,
): Promise<StoredRecord<EntityRecord<TAttributes>>> {
  const record = await reader.get<EntityRecord<TAttributes>>(kind, id);
  if (record === undefined) throw new ContractError('NOT_FOUND', `no ${kind} with id ${id}`, { kind, id });
  return record;
}

export function entityState(record: StoredRecord<EntityRecord<unknown>>): string {
  return record.data.snapshot.value;
}

/**
 * Sends one event to a stored entity inside `tx`: the machine decides. A refused event throws a typed
 * `ILLEGAL_TRANSITION` (HTTP 422) before anything is written, so the whole transaction commits nothing.
 * An accepted one writes the next persisted snapshot with compare-and-set on the record version and seals
 * the record when the machine reached a final state.
 *
 * @example
 * ```ts
 * await store.transact((tx) =>
 *   transitionEntity(tx, occurrenceMachine, 'occurrence', id, { type: 'eligibility_passed', actor: 'scheduler', now }),
 * );
 * ```
 */
export async function transitionEntity<TAttributes>(
  tx: StoreTransaction,
  machine: AnyStateMachine,
  kind: string,
  id: string,
  event: EventObject & { actor?: string; now?: string } & Record<string, unknown>,
  /** The new attributes, given the current ones and the state the machine moves to. */
  attributes?: (current: TAttributes, to: string) => TAttributes,
): Promise<EntityTransition<TAttributes>> {
  const current = await readEntity<TAttributes>(tx, kind, id);
  if (current.data.machineId !== machine.id) {
    throw new ContractError(
      'INTERNAL',
      `${kind} ${id} belongs to machine ${current.data.machineId}, not ${machine.id}`,
    );
  }
  // No copy of the frozen stored context: a pure transition only reads it (assign builds a new context).
  const snapshot = machine.resolveState({ value: current.data.snapshot.value, context: current.data.snapshot.context });
  const from = String(snapshot.value);
  const [next] = pureTransition(machine, snapshot, event);
  // A refused event leaves the snapshot it was given as it was (the invariant suite's machine walks check exactly
  // that), so the machine's `can`, which selects the transitions a second time, is asked only then.
  if (next === snapshot && !snapshot.can(event)) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `${machine.id} refuses ${event.type} from ${event.actor ?? 'an unnamed actor'} in state ${from}`,
      {
        machine: machine.id,
        kind,
        id,
        state: from,
        event: event.type,
        actor: event.actor ?? null,
      },
    );
  }
  const terminal = next.status === 'done';
  const record = await tx.put<EntityRecord<TAttributes>>(
    kind,
    id,
    {
      machineId: machine.id,
      snapshot: persistSnapshot(machine, next),
      attributes:
        attributes === undefined ? current.data.attributes : attributes(current.data.attributes, String(next.value)),
    },
    { expectedVersion: current.version, terminal, handOver: true },
  );
  return { kind, id, from, to: String(next.value), event, terminal, record, snapshot: next };
}

/**
 * Rewrites an entity's contract attributes without a lifecycle transition (e.g. a revise that keeps a
 * definition active). The persisted snapshot is carried over unchanged: only the machine moves state.
 */
export async function updateEntityAttributes<TAttributes>(
  tx: StoreTransaction,
  kind: string,
  id: string,
  expectedVersion: number,
  update: (current: TAttributes) => TAttributes,
): Promise<StoredRecord<EntityRecord<TAttributes>>> {
  const current = await readEntity<TAttributes>(tx, kind, id);
  return tx.put<EntityRecord<TAttributes>>(
    kind,
    id,
    { ...current.data, attributes: update(current.data.attributes) },
    { expectedVersion, terminal: current.terminal, handOver: true },
  );
}
