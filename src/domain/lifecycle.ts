import type { AnyStateMachine } from 'xstate';
import {
  createEntity,
  transitionEntity,
  type EntityRecord,
  type EntityTransition,
} from '../actors/entity-transition.js';
import { appendEvent, type AppendedEvent } from '../changefeed/append-event.js';
import type { ChangefeedContext, StreamRef } from '../changefeed/event-envelope.js';
import type { ContractActor } from '../contract/vocabulary.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { KINDS, OCCURRENCE_LIVE, type OccurrenceRecord, type StateOf } from './records.js';
import type { OccurrenceState } from '../../machines/index.js';
import type { CommittedTransition } from './inspection.js';
import { queueForRetention } from './retention-queue.js';
import { machinesInUse } from './machine-set.js';

/** One engine step's transaction: the store transaction plus what its events need. */
export interface StepContext {
  tx: StoreTransaction;
  feed: ChangefeedContext;
  now: string;
  /** The command that caused the step, if any: recorded as the events' causation. */
  adoptionKey?: string;
  /** Collects the step's transitions for observers, who see them only once the step committed. */
  committed?: CommittedTransition[];
  /** Run once the step committed (not if it rolled back): what the engine may remember of its writes. */
  afterCommit?: Array<() => void>;
}

export type ExecutionEntity = 'occurrence' | 'run' | 'attempt';

/**
 * The first occurrence of an automation that holds live work (claimed through recovery_required), other than
 * `except`: overlap=forbid and runNow refuse to start a second one while it exists. Read from the store's index
 * of live work, which the occurrence's own write keeps current in the same transaction.
 */
export async function liveWorkOf(
  reader: StoreReader,
  automationId: string,
  except?: string,
): Promise<string | undefined> {
  for (const work of await reader.liveWork('occurrence', { automationId })) {
    if (work.id !== except && OCCURRENCE_LIVE.has(work.state as OccurrenceState)) return work.id;
  }
  return undefined;
}

/** Read at each step: an engine may run on machines built from a user's spec (see runOnMachines). */
const machineOf = (entity: ExecutionEntity): AnyStateMachine => machinesInUse()[entity];

interface EventLinks {
  stream: StreamRef;
  automationId?: string;
  occurrenceId?: string;
  runId?: string;
  attemptId?: string;
  fenceGeneration?: number;
  attemptNumber?: number;
}

function links(entity: ExecutionEntity, id: string, context: Record<string, unknown>): EventLinks {
  if (entity === 'occurrence') {
    return {
      stream: { kind: 'occurrence', id },
      automationId: context.automationId as string,
      occurrenceId: id,
      fenceGeneration: (context.fence as { generation: number }).generation,
    };
  }
  if (entity === 'run') {
    return {
      stream: { kind: 'run', id },
      automationId: context.automationId as string,
      occurrenceId: context.occurrenceId as string,
      runId: id,
      fenceGeneration: context.fenceGeneration as number,
    };
  }
  return {
    stream: { kind: 'run', id: context.runId as string },
    occurrenceId: context.occurrenceId as string,
    runId: context.runId as string,
    attemptId: id,
    fenceGeneration: context.fenceGeneration as number,
    attemptNumber: context.attemptNumber as number,
  };
}

async function transitionedEvent(
  step: StepContext,
  entity: ExecutionEntity,
  id: string,
  from: string,
  to: string,
  reason: string,
  context: Record<string, unknown>,
  created = false,
): Promise<AppendedEvent> {
  const l = links(entity, id, context);
  return appendEvent(step.tx, step.feed, {
    stream: l.stream,
    // An occurrence or run being created starts its own stream: ids are derived so that a second creation
    // conflicts, and a re-created one's earlier streams were retired first (docs/operations.md, the replay
    // guarantee). An attempt's events go to its run's stream.
    newStream: created && entity !== 'attempt',
    kind: `${entity}.transitioned`,
    summary: `${entity} ${id} ${from} -> ${to}`,
    payload: {
      entity,
      from,
      to,
      reason,
      ...(l.fenceGeneration === undefined ? {} : { fenceGeneration: l.fenceGeneration }),
      ...(l.attemptNumber === undefined ? {} : { attemptNumber: l.attemptNumber }),
      ...(step.adoptionKey === undefined ? {} : { commandAdoptionKey: step.adoptionKey }),
    },
    ...(l.automationId === undefined ? {} : { automationId: l.automationId }),
    ...(l.occurrenceId === undefined ? {} : { occurrenceId: l.occurrenceId }),
    ...(l.runId === undefined ? {} : { runId: l.runId }),
    ...(l.attemptId === undefined ? {} : { attemptId: l.attemptId }),
    ...(step.adoptionKey === undefined ? {} : { adoptionKey: step.adoptionKey }),
  });
}

/** Creates an execution entity in its machine's initial state and records the `none -> initial` event. */
export async function createExecutionEntity<T>(
  step: StepContext,
  entity: ExecutionEntity,
  id: string,
  input: unknown,
  attributes: T,
  reason: string,
): Promise<StoredRecord<EntityRecord<T>>> {
  const record = await createEntity(step.tx, machineOf(entity), KINDS[entity], id, input, attributes);
  const { value, context } = record.data.snapshot;
  await transitionedEvent(step, entity, id, 'none', value, reason, context, true);
  step.committed?.push({
    entity,
    id,
    from: 'none',
    to: record.data.snapshot.value,
    event: { type: 'xstate.init' },
    context: record.data.snapshot.context,
  });
  return record;
}

/**
 * Sends one event to an execution entity (the machine decides; ILLEGAL_TRANSITION otherwise), updates its
 * attributes in the same write, and records the `<entity>.transitioned` event.
 */
export async function moveEntity<T>(
  step: StepContext,
  entity: ExecutionEntity,
  id: string,
  event: { type: string; actor: ContractActor } & Record<string, unknown>,
  update?: (attributes: T) => T,
  reason?: string,
): Promise<EntityTransition<T, StateOf<T>>> {
  const committed = await transitionEntity<T>(
    step.tx,
    machineOf(entity),
    KINDS[entity],
    id,
    { ...event, now: step.now },
    update,
  );
  if (committed.terminal && entity === 'occurrence')
    await queueForRetention(step, committed.record as unknown as OccurrenceRecord);
  await transitionedEvent(
    step,
    entity,
    id,
    committed.from,
    committed.to,
    reason ?? event.type,
    committed.record.data.snapshot.context,
  );
  step.committed?.push({
    entity,
    id,
    from: committed.from,
    to: committed.to,
    event: { ...event, now: step.now },
    context: committed.record.data.snapshot.context,
  });
  // `T` names the entity's attributes, as `update` already assumes, so the machine's states are StateOf<T>.
  return committed as EntityTransition<T, StateOf<T>>;
}
