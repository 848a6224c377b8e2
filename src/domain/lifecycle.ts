import type { AnyStateMachine } from 'xstate';
import {
  createEntity,
  transitionEntity,
  type EntityRecord,
  type EntityTransition,
} from '../actors/entity-transition.js';
import {
  appendEvent,
  type ChangefeedContext,
  type EventEnvelope,
  type StreamRef,
} from '../changefeed/event-envelope.js';
import type { ContractActor } from '../contract/vocabulary.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord, type StateOf } from './records.js';
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
 * Index records of live (non-terminal) occurrences and attempts, kept in the same transaction as the
 * transition that starts or ends them, so every pass reads live work without scanning history.
 */
export const LIVE_INDEX = { occurrence: 'live-occurrence', attempt: 'live-attempt' } as const;
/**
 * `<automationId>` → its live occurrence ids: the overlap check reads one small record per claim instead of
 * the whole live index, which made each pass quadratic in the number of due occurrences.
 */
export const LIVE_BY_AUTOMATION = 'live-occurrence-by-automation';

/** The live occurrence ids of one automation, in the order they were created. */
export async function liveOccurrencesOf(reader: StoreReader, automationId: string): Promise<readonly string[]> {
  return (await reader.get<{ occurrenceIds: string[] }>(LIVE_BY_AUTOMATION, automationId))?.data.occurrenceIds ?? [];
}

/**
 * The first occurrence of an automation that holds live work (claimed through recovery_required), other than
 * `except`: overlap=forbid and runNow refuse to start a second one while it exists.
 */
export async function liveWorkOf(
  reader: StoreReader,
  automationId: string,
  except?: string,
): Promise<string | undefined> {
  for (const id of await liveOccurrencesOf(reader, automationId)) {
    if (id === except) continue;
    const occurrence = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
    if (occurrence !== undefined && OCCURRENCE_LIVE.has(stateOf(occurrence))) return id;
  }
  return undefined;
}

async function indexLiveOccurrence(
  step: StepContext,
  automationId: unknown,
  occurrenceId: string,
  live: boolean,
): Promise<void> {
  if (typeof automationId !== 'string') return;
  const current = await step.tx.get<{ occurrenceIds: string[] }>(LIVE_BY_AUTOMATION, automationId);
  const ids = (current?.data.occurrenceIds ?? []).filter((id) => id !== occurrenceId);
  if (live) ids.push(occurrenceId);
  if (ids.length === 0) {
    if (current !== undefined) await step.tx.delete(LIVE_BY_AUTOMATION, automationId, current.version);
    return;
  }
  await step.tx.put(
    LIVE_BY_AUTOMATION,
    automationId,
    { occurrenceIds: ids },
    { expectedVersion: current?.version ?? null },
  );
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
): Promise<EventEnvelope> {
  const l = links(entity, id, context);
  return appendEvent(step.tx, step.feed, {
    stream: l.stream,
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
  if (entity !== 'run') {
    const context = record.data.snapshot.context;
    await step.tx.put(
      LIVE_INDEX[entity],
      id,
      { since: step.now, automationId: context.automationId ?? null, runId: context.runId ?? null },
      { expectedVersion: null },
    );
    if (entity === 'occurrence') await indexLiveOccurrence(step, context.automationId, id, true);
  }
  await transitionedEvent(step, entity, id, 'none', record.data.snapshot.value, reason, record.data.snapshot.context);
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
  if (committed.terminal && entity !== 'run') {
    const live = await step.tx.get(LIVE_INDEX[entity], id);
    if (live !== undefined) await step.tx.delete(LIVE_INDEX[entity], id, live.version);
    if (entity === 'occurrence') {
      await indexLiveOccurrence(step, committed.record.data.snapshot.context.automationId, id, false);
      await queueForRetention(step, committed.record as unknown as OccurrenceRecord);
    }
  }
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
