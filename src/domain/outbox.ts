import type { AnyStateMachine } from 'xstate';
import { machinesInUse } from './machine-set.js';
import { OutboxState, isOutboxState } from '../../machines/extension-states.js';
import { createEntity, transitionEntity, type EntityRecord } from '../actors/entity-transition.js';
import { outboxIdOf, type OutboxContext, type OutboxEvent, type OutboxInput } from '../guards/outbox.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { isEntityData, rewriteLegacyEntity } from './legacy-entities.js';
import type { StepContext } from './lifecycle.js';
import { KINDS, type OutboxEntry } from './records.js';

/** Read at each step: an engine may run on machines built from a user's spec (see runOnMachines). */
const machine = (): AnyStateMachine => machinesInUse().outbox;
/** Side index of launches committed and not yet sent: the dispatch phase releases these without a scan. */
export const PENDING_LAUNCH = 'pending-launch';

/** An outbox record read through x-coven-automata.outbox.v1: its committed state and its context. */
export interface OutboxView {
  id: string;
  version: number;
  state: OutboxState;
  entry: OutboxEntry;
}

/** An outbox event as a folder sends it: the engine supplies `now`. */
export type OutboxSend = OutboxEvent extends infer E ? (E extends unknown ? Omit<E, 'now'> : never) : never;

/** How outbox records were kept before the outbox had a machine: the status beside the launch's fields. */
interface LegacyOutboxEntry extends Omit<OutboxInput, 'sentAt' | 'resends'> {
  status: string;
  sentAt?: string;
  resends?: number;
}

function legacyContext(id: string, data: LegacyOutboxEntry): OutboxContext {
  return {
    outboxId: id,
    attemptId: data.attemptId,
    occurrenceId: data.occurrenceId,
    runId: data.runId,
    dispatchGeneration: data.dispatchGeneration,
    committedAt: data.committedAt,
    sentAt: data.sentAt ?? null,
    resends: data.resends ?? 0,
  };
}

/**
 * The committed state and context of an outbox record, in either shape: the machine's, or the `{status, …}`
 * one stores written before the outbox had a machine (read as the state that status names).
 */
export function outboxView(record: StoredRecord<unknown>): OutboxView {
  if (isEntityData(record.data)) {
    const { value, context } = record.data.snapshot;
    return {
      id: record.id,
      version: record.version,
      state: value as OutboxState,
      entry: context as unknown as OutboxEntry,
    };
  }
  const legacy = record.data as LegacyOutboxEntry;
  if (!isOutboxState(legacy.status)) throw new Error(`outbox ${record.id} has unknown status ${legacy.status}`);
  return { id: record.id, version: record.version, state: legacy.status, entry: legacyContext(record.id, legacy) };
}

export async function readOutbox(reader: StoreReader, outboxId: string): Promise<OutboxView | undefined> {
  const record = await reader.get(KINDS.outbox, outboxId);
  return record === undefined ? undefined : outboxView(record);
}

/** The current launch of an attempt (its latest dispatch generation), if one was committed. */
export async function readAttemptLaunch(
  reader: StoreReader,
  attemptId: string,
  dispatchGeneration: number,
): Promise<OutboxView | undefined> {
  return readOutbox(reader, outboxIdOf(attemptId, dispatchGeneration));
}

/** Commits a launch in `pending` and indexes it for release. Returns its outbox id. */
export async function createOutbox(step: StepContext, input: OutboxInput): Promise<string> {
  const outboxId = outboxIdOf(input.attemptId, input.dispatchGeneration);
  await createEntity(step.tx, machine(), KINDS.outbox, outboxId, input, {});
  await step.tx.put(PENDING_LAUNCH, outboxId, { committedAt: step.now }, { expectedVersion: null });
  return outboxId;
}

/** Brings a legacy-shaped outbox record into machine form in `tx` (first touch); machine records pass through. */
async function upgraded(tx: StoreTransaction, record: StoredRecord<unknown>): Promise<void> {
  if (isEntityData(record.data)) return;
  const view = outboxView(record);
  await rewriteLegacyEntity<Record<string, never>>(
    tx,
    machine(),
    KINDS.outbox,
    record.id,
    record.version,
    view.state,
    { ...view.entry },
    {},
  );
}

/**
 * Sends one event to a launch's outbox machine (ILLEGAL_TRANSITION, committing nothing, when it refuses) and
 * keeps the pending-launch index in step with it. A record still in the pre-machine shape is upgraded first,
 * in the same transaction. Extension entities put nothing on the changefeed, which carries contract events only.
 */
export async function moveOutbox(step: StepContext, outboxId: string, event: OutboxSend): Promise<OutboxView> {
  const record = await step.tx.get(KINDS.outbox, outboxId);
  if (record !== undefined) await upgraded(step.tx, record);
  const moved = await transitionEntity<Record<string, never>>(step.tx, machine(), KINDS.outbox, outboxId, {
    ...event,
    now: step.now,
  });
  const pending = await step.tx.get(PENDING_LAUNCH, outboxId);
  if (moved.to === OutboxState.pending && pending === undefined)
    await step.tx.put(PENDING_LAUNCH, outboxId, { committedAt: step.now }, { expectedVersion: null });
  if (moved.to !== OutboxState.pending && pending !== undefined)
    await step.tx.delete(PENDING_LAUNCH, outboxId, pending.version);
  return outboxView(moved.record as StoredRecord<EntityRecord<unknown>>);
}
