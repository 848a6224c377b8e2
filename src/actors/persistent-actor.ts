import {
  createActor,
  type AnyActorRef,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type InspectionEvent,
  type SnapshotFrom,
} from 'xstate';
import type { Store } from '../store/store.js';
import {
  createEntity,
  readEntity,
  restoreSnapshot,
  transitionEntity,
  type EntityRecord,
  type EntityTransition,
} from './entity-transition.js';

export interface PersistentActorOptions {
  store: Store;
  /** Record kind in the store, e.g. `occurrence`. */
  kind: string;
  id: string;
  /** Receives XState inspection events of the live actor (e.g. a Stately inspector's `inspect`). */
  inspect?: (event: InspectionEvent) => void;
}

/**
 * One lifecycle entity as a durable XState actor. Every `send` is decided by the generated machine and
 * committed to the store (snapshot, version, and a transition entry on the `<kind>/<id>` stream) before
 * the live actor moves; a refused event throws `ILLEGAL_TRANSITION` and changes nothing anywhere.
 *
 * @example
 * ```ts
 * import { definitionMachine } from 'coven-automata';
 * const store = await JsonFileStore.open('./automations.json');
 * const actor = await PersistentActor.create(
 *   definitionMachine,
 *   { store, kind: 'definition', id: 'nightly' },
 *   { automationId: 'nightly', revision: 1 },
 * );
 * await actor.send({ type: 'definition_tombstoned', actor: 'command_handler', now: clock.now(), revision: 2 });
 * // later, in another process:
 * const again = await PersistentActor.load(definitionMachine, { store, kind: 'definition', id: 'nightly' });
 * again.state; // 'tombstoned'
 * ```
 */
export class PersistentActor<TMachine extends AnyStateMachine> {
  private live: AnyActorRef;
  private storedVersion: number;

  private constructor(
    readonly machine: TMachine,
    private readonly options: PersistentActorOptions,
    record: EntityRecord<unknown>,
    version: number,
  ) {
    this.live = this.start(record);
    this.storedVersion = version;
  }

  /** Creates the entity in its initial state (the id must be new) and returns its actor. */
  static async create<M extends AnyStateMachine>(
    machine: M,
    options: PersistentActorOptions,
    input: unknown,
    attributes: Record<string, unknown> = {},
  ): Promise<PersistentActor<M>> {
    const record = await options.store.transact((tx) =>
      createEntity(tx, machine, options.kind, options.id, input, attributes),
    );
    return new PersistentActor(machine, options, record.data, record.version);
  }

  /** Restores the actor of a stored entity from its persisted snapshot. */
  static async load<M extends AnyStateMachine>(
    machine: M,
    options: PersistentActorOptions,
  ): Promise<PersistentActor<M>> {
    const record = await options.store.read((r) => readEntity(r, options.kind, options.id));
    return new PersistentActor(machine, options, record.data, record.version);
  }

  get snapshot(): SnapshotFrom<TMachine> {
    return this.live.getSnapshot() as SnapshotFrom<TMachine>;
  }
  get state(): string {
    return String((this.live.getSnapshot() as AnyMachineSnapshot).value);
  }
  get context(): AnyMachineSnapshot['context'] {
    return (this.live.getSnapshot() as AnyMachineSnapshot).context;
  }
  /** The store version of the record this actor last committed or loaded. */
  get version(): number {
    return this.storedVersion;
  }

  /**
   * Commits `event` if the machine accepts it in the entity's current stored state.
   * @throws ContractError `ILLEGAL_TRANSITION` when the machine refuses it (nothing is written).
   */
  async send(
    event: EventFromLogic<TMachine> & { type: string; actor: string; now: string },
  ): Promise<EntityTransition<unknown>> {
    const { kind, id, store } = this.options;
    const sent = event as { type: string; actor: string; now: string };
    const result = await store.transact(async (tx) => {
      const committed = await transitionEntity<unknown>(tx, this.machine, kind, id, sent);
      await tx.append(`${kind}/${id}`, {
        type: `${kind}.transitioned`,
        from: committed.from,
        to: committed.to,
        on: sent.type,
        actor: sent.actor,
        at: sent.now,
      });
      return committed;
    });
    if (result.record.version === this.storedVersion + 1) {
      this.live.send(event);
    } else {
      // Another writer moved the entity in between: follow the store rather than the stale live actor.
      this.live.stop();
      this.live = this.start(result.record.data);
    }
    this.storedVersion = result.record.version;
    return result;
  }

  stop(): void {
    this.live.stop();
  }

  private start(record: EntityRecord<unknown>): AnyActorRef {
    const snapshot = restoreSnapshot(this.machine, record.snapshot);
    return createActor(this.machine as AnyStateMachine, {
      snapshot: this.machine.getPersistedSnapshot(snapshot),
      ...(this.options.inspect === undefined ? {} : { inspect: this.options.inspect }),
    }).start();
  }
}
