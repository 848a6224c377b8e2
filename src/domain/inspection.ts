import type { AnyStateMachine } from 'xstate';
import { attemptMachine, definitionMachine, occurrenceMachine, runMachine } from '../../machines/index.js';
import type { EventEnvelope } from '../changefeed/event-envelope.js';

/**
 * One committed transition of an execution entity, as a step hands it to `EngineServices.observer` once the
 * step committed. The inspector no longer uses it (it follows the changefeed, see {@link InspectionMirror}).
 */
export interface CommittedTransition {
  entity: 'occurrence' | 'run' | 'attempt';
  id: string;
  from: string;
  to: string;
  event: { type: string } & Record<string, unknown>;
  context: Record<string, unknown>;
}

/**
 * Receives each step's committed transitions, once the step is durable, from the engine that committed it: how
 * traces are made (see coven-automata/otel). Must not throw or block: it runs on the engine's path.
 */
export interface CommitTracing {
  committed(transitions: readonly CommittedTransition[]): void;
}

/** The four contract machines whose entities the inspector shows. */
export type InspectedEntity = 'definition' | 'occurrence' | 'run' | 'attempt';

/** A snapshot as the Stately inspector takes it: the committed state, and the changefeed's facts as context. */
export interface InspectedSnapshot {
  status: 'active' | 'done';
  value: string;
  context: Record<string, unknown>;
}

/** The event an inspected actor took: the machine's event name, with where it came from in the changefeed. */
export interface InspectedEvent {
  type: string;
  [field: string]: unknown;
}

/**
 * An entity as the inspector sees an actor: `sessionId` is `<entity>/<id>`, `logic.config` the machine (the
 * Stately inspector draws it), `_parent` the entity it belongs to (attempt → run → occurrence → definition).
 * `send` does nothing: the mirror shows what the engine committed and never drives an entity.
 */
export interface InspectedActorRef {
  sessionId: string;
  id: string;
  logic: { config: unknown };
  _parent?: InspectedActorRef;
  send(event: unknown): void;
  getSnapshot(): InspectedSnapshot;
}

/**
 * Where the mirror sends what it sees. A Stately inspector (`createInspector(adapter)` from @statelyai/inspect)
 * is one: its `actor`, `event` and `snapshot` deliver synchronously, in call order.
 */
export interface InspectionSink {
  actor(actor: InspectedActorRef, snapshot?: InspectedSnapshot): void;
  event(actor: InspectedActorRef, event: InspectedEvent): void;
  snapshot(actor: InspectedActorRef, snapshot: InspectedSnapshot, info?: { event?: InspectedEvent }): void;
}

/** What the mirror has seen; `joinedLate` and `compacted` count entities it could not show from their start. */
export interface InspectionStats {
  position: number;
  entities: number;
  transitions: number;
  /** Entities first seen mid-life (the mirror started after their creation): registered in their `from` state. */
  joinedLate: number;
  /** Entities whose history retention removed before the mirror read it: not shown. */
  compacted: number;
  /** Transitions whose `from` differed from the state the mirror held (history with a gap). */
  mismatches: number;
}

const MACHINES: Record<InspectedEntity, AnyStateMachine> = {
  definition: definitionMachine as unknown as AnyStateMachine,
  occurrence: occurrenceMachine as unknown as AnyStateMachine,
  run: runMachine as unknown as AnyStateMachine,
  attempt: attemptMachine as unknown as AnyStateMachine,
};

/** The machine events a definition changefeed kind may stand for; the machine picks by source and target. */
const DEFINITION_EVENTS: Record<string, string[]> = {
  'definition.revised': ['definition_revise_committed'],
  'definition.activated': ['definition_activated'],
  'definition.paused': ['definition_paused', 'definition_reenabled'],
  'definition.disabled': ['definition_disabled'],
  'definition.invalidated': ['definition_invalidated'],
  'definition.tombstoned': ['definition_tombstoned'],
};
const CREATIONS = new Set(['definition.created', 'definition.imported']);

interface MachineTransition {
  target?: string;
  meta?: { actor?: string };
}
type StateConfig = { type?: string; on?: Record<string, MachineTransition[]> };

function stateConfig(machine: AnyStateMachine, state: string): StateConfig | undefined {
  return (machine.config.states as Record<string, StateConfig> | undefined)?.[state];
}

/**
 * The machine event that takes `from` to `to`, and the contract actor the spec names for it: a hint (the
 * event's recorded reason) when the machine has it there, else the only event that does; undefined when the
 * machine has no such transition (a definition revised in place keeps its state).
 */
export function machineEventFor(
  machine: AnyStateMachine,
  from: string,
  to: string,
  hints: readonly string[],
): { type: string; actor?: string } | undefined {
  const candidates = Object.entries(stateConfig(machine, from)?.on ?? {}).flatMap(([type, transitions]) =>
    (Array.isArray(transitions) ? transitions : [transitions])
      .filter((t) => t.target === to)
      .slice(0, 1)
      .map((t) => ({ type, ...(t.meta?.actor === undefined ? {} : { actor: t.meta.actor }) })),
  );
  return candidates.find((c) => hints.includes(c.type)) ?? (candidates.length === 1 ? candidates[0] : undefined);
}

/** The entity a changefeed event moves, with its states; undefined for events that move none. */
interface EntityStep {
  entity: InspectedEntity;
  id: string;
  from: string | undefined;
  to: string;
  hints: string[];
}

function stepOf(e: EventEnvelope): EntityStep | undefined {
  if (e.kind.startsWith('definition.')) {
    const to = e.payload.lifecycleState;
    if (typeof to !== 'string') return undefined;
    const creation = CREATIONS.has(e.kind);
    return { entity: 'definition', id: e.stream.id, from: creation ? 'none' : undefined, to, hints: [] };
  }
  if (!e.kind.endsWith('.transitioned')) return undefined;
  const entity = e.payload.entity as InspectedEntity;
  const id = entity === 'attempt' ? e.attemptId : e.stream.id;
  if (MACHINES[entity] === undefined || id === undefined) return undefined;
  const reason = typeof e.payload.reason === 'string' ? [e.payload.reason] : [];
  return { entity, id, from: String(e.payload.from), to: String(e.payload.to), hints: reason };
}

/** The changefeed's facts about the entity at this event: its links and the event's payload, minus the states. */
function contextOf(e: EventEnvelope): Record<string, unknown> {
  const { from: _from, to: _to, entity: _entity, lifecycleState: _state, ...facts } = e.payload;
  return {
    ...(e.automationId === undefined ? {} : { automationId: e.automationId }),
    ...(e.occurrenceId === undefined ? {} : { occurrenceId: e.occurrenceId }),
    ...(e.runId === undefined ? {} : { runId: e.runId }),
    ...(e.attemptId === undefined ? {} : { attemptId: e.attemptId }),
    ...facts,
    recordedAt: e.recordedAt,
  };
}

interface Seen {
  ref: InspectedActorRef;
  snapshot: InspectedSnapshot;
}

/**
 * Replays committed changefeed events, in global commit order, as Stately inspection events: each entity of
 * the four contract machines is registered once (`@xstate.actor`) in the state its creation committed — the
 * machine's initial state — and every later committed transition, whoever made it (a pass, an operator
 * command, another process through the daemon), becomes one `@xstate.event` and one `@xstate.snapshot`. It
 * never runs the machines: the store's history is the truth, and the machine only names the event it took.
 *
 * @example
 * ```ts
 * const mirror = new InspectionMirror(createInspector({ send: (e) => socket.send(JSON.stringify(e)) }));
 * for (const entry of await store.read((r) => readEventFeed(r))) mirror.apply(entry.data, entry.position);
 * ```
 */
export class InspectionMirror {
  private readonly seen = new Map<string, Seen>();
  private readonly counts = { transitions: 0, joinedLate: 0, compacted: 0, mismatches: 0 };
  private lastPosition = -1;

  constructor(private readonly sink: InspectionSink) {}

  /** Applies one committed changefeed event at its global feed position; events that move no entity pass. */
  apply(envelope: EventEnvelope, position: number): void {
    this.lastPosition = Math.max(this.lastPosition, position);
    if (envelope.kind === 'feed.snapshot') {
      this.noteCompaction(envelope);
      return;
    }
    const step = stepOf(envelope);
    if (step === undefined) return;
    const key = `${step.entity}/${step.id}`;
    const known = this.seen.get(key);
    if (known === undefined && step.from === 'none') {
      this.register(step, key, envelope, { value: step.to, context: contextOf(envelope) }, position);
      return;
    }
    if (known === undefined && step.from === undefined) {
      // A definition event names only the state it leaves; one first seen here joined after its creation.
      this.counts.joinedLate++;
      this.register(step, key, envelope, { value: step.to, context: contextOf(envelope) }, position);
      return;
    }
    const from = step.from ?? known!.snapshot.value;
    const current = known ?? this.joinLate(step, key, from, envelope);
    if (current.snapshot.value !== from) this.counts.mismatches++;
    this.move(step, current, from, envelope, position);
  }

  stats(): InspectionStats {
    return { position: this.lastPosition, entities: this.seen.size, ...this.counts };
  }

  /** A stream compacted by retention: nothing to show once its history was replayed, a gap if it never was. */
  private noteCompaction(envelope: EventEnvelope): void {
    const entity = envelope.stream.kind as InspectedEntity;
    if (!this.seen.has(`${entity}/${envelope.stream.id}`)) this.counts.compacted++;
  }

  private register(
    step: EntityStep,
    key: string,
    envelope: EventEnvelope,
    state: { value: string; context: Record<string, unknown> },
    position: number,
  ): Seen {
    const machine = MACHINES[step.entity];
    const parent = this.parentOf(step.entity, envelope);
    const entry: Seen = { ref: undefined as never, snapshot: this.snapshotOf(step.entity, state) };
    entry.ref = {
      sessionId: key,
      id: key,
      logic: { config: machine.config },
      ...(parent === undefined ? {} : { _parent: parent }),
      send: () => undefined,
      getSnapshot: () => entry.snapshot,
    };
    this.seen.set(key, entry);
    this.sink.actor(entry.ref, entry.snapshot);
    if (step.from === 'none') {
      const init = { type: 'xstate.init', ...this.origin(envelope, position) };
      this.sink.event(entry.ref, init);
      this.sink.snapshot(entry.ref, entry.snapshot, { event: init });
    }
    return entry;
  }

  /** An entity created before the mirror's first event: registered where this event found it. */
  private joinLate(step: EntityStep, key: string, from: string, envelope: EventEnvelope): Seen {
    this.counts.joinedLate++;
    return this.register({ ...step, from: undefined }, key, envelope, { value: from, context: {} }, -1);
  }

  private move(step: EntityStep, current: Seen, from: string, envelope: EventEnvelope, position: number): void {
    const hints = step.entity === 'definition' ? (DEFINITION_EVENTS[envelope.kind] ?? []) : step.hints;
    const machineEvent = machineEventFor(MACHINES[step.entity], from, step.to, hints);
    const event: InspectedEvent = {
      type: machineEvent?.type ?? step.hints[0] ?? envelope.kind,
      ...(machineEvent?.actor === undefined ? {} : { actor: machineEvent.actor }),
      ...this.origin(envelope, position),
    };
    current.snapshot = this.snapshotOf(step.entity, { value: step.to, context: contextOf(envelope) });
    this.counts.transitions++;
    this.sink.event(current.ref, event);
    this.sink.snapshot(current.ref, current.snapshot, { event });
  }

  private snapshotOf(entity: InspectedEntity, state: { value: string; context: Record<string, unknown> }) {
    const final = stateConfig(MACHINES[entity], state.value)?.type === 'final';
    return { status: final ? 'done' : 'active', value: state.value, context: state.context } as InspectedSnapshot;
  }

  /** Where the event stands in the changefeed, so a viewer can find it with `events --after`. */
  private origin(envelope: EventEnvelope, position: number): Record<string, unknown> {
    return {
      kind: envelope.kind,
      ...(typeof envelope.payload.reason === 'string' ? { reason: envelope.payload.reason } : {}),
      eventId: envelope.eventId,
      stream: `${envelope.stream.kind}/${envelope.stream.id}`,
      sequence: envelope.sequence,
      ...(position >= 0 ? { position } : {}),
      recordedAt: envelope.recordedAt,
      producer: envelope.producer.component,
    };
  }

  /** The entity this one belongs to, so the inspector groups an automation's work under its definition. */
  private parentOf(entity: InspectedEntity, e: EventEnvelope): InspectedActorRef | undefined {
    const parent =
      entity === 'attempt'
        ? `run/${e.runId}`
        : entity === 'run'
          ? `occurrence/${e.occurrenceId}`
          : entity === 'occurrence'
            ? `definition/${e.automationId}`
            : undefined;
    return parent === undefined ? undefined : this.seen.get(parent)?.ref;
  }
}
