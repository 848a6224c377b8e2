import type { AnyStateMachine } from 'xstate';
import { machinesInUse } from './machine-set.js';
import { DeliveryState } from '../../machines/extension-states.js';
import { createEntity, transitionEntity, type EntityRecord } from '../actors/entity-transition.js';
import type { DeliveryContext, DeliveryEvent, DeliveryInput } from '../guards/delivery.js';
import type { StoredRecord, StoreReader } from '../store/store.js';
import type { AutomationDefinition } from './definition-body.js';
import { DEFINITION_REVISION_KIND, revisionId } from './definition-records.js';
import type { StepContext } from './lifecycle.js';
import { KINDS } from './records.js';

/** Read at each step: an engine may run on machines built from a user's spec (see runOnMachines). */
const machine = (): AnyStateMachine => machinesInUse().delivery;
/**
 * `<attemptId>` of every delivery in `pending`, kept in the transitions that enter and leave it, so a pass finds the
 * interrupted ones without reading every delivery ever made.
 */
export const PENDING_DELIVERY_INDEX = 'pending-delivery';

/** A delivery event as a caller sends it: the engine supplies `now`. */
export type DeliverySend = DeliveryEvent extends infer E ? (E extends unknown ? Omit<E, 'now'> : never) : never;
export type DeliveryRecord = StoredRecord<EntityRecord<Record<string, never>>>;

/** What a delivery record says, read without its machine. */
export interface DeliveryView extends DeliveryContext {
  state: DeliveryState;
}

export const deliveryView = (record: DeliveryRecord): DeliveryView => ({
  ...(record.data.snapshot.context as unknown as DeliveryContext),
  state: record.data.snapshot.value as DeliveryState,
});

/** The attempt's delivery, when one was ever started (attempts that deliver nothing have no record: `none`). */
export async function deliveryOf(reader: StoreReader, attemptId: string): Promise<DeliveryView | undefined> {
  const record = await reader.get<EntityRecord<Record<string, never>>>(KINDS.delivery, attemptId);
  return record === undefined ? undefined : deliveryView(record);
}

/**
 * The atomic outputTarget of the definition revision a run pinned, if it names one. The pinned revision decides,
 * so a revision that adds or drops the target never changes what a run already under way delivers.
 */
export async function pinnedOutputTarget(
  reader: StoreReader,
  automationId: string,
  revision: number,
): Promise<string | undefined> {
  const record = await reader.get<AutomationDefinition>(DEFINITION_REVISION_KIND, revisionId(automationId, revision));
  return record?.data.policies.delivery?.outputTarget;
}

/** Writes the attempt's delivery record and moves it none -> pending (ILLEGAL_TRANSITION when the machine refuses). */
export async function startDelivery(
  step: StepContext,
  input: DeliveryInput,
  event: Extract<DeliverySend, { type: 'delivery_started' }>,
): Promise<void> {
  await createEntity(step.tx, machine(), KINDS.delivery, input.attemptId, input, {});
  await moveDelivery(step, input.attemptId, event);
  await step.tx.put(PENDING_DELIVERY_INDEX, input.attemptId, { since: step.now }, { expectedVersion: null });
}

/** Sends one event to the attempt's delivery; extension entities put nothing on the changefeed. */
export async function moveDelivery(step: StepContext, attemptId: string, event: DeliverySend): Promise<DeliveryView> {
  const moved = await transitionEntity(step.tx, machine(), KINDS.delivery, attemptId, { ...event, now: step.now });
  if (moved.terminal) {
    const index = await step.tx.get(PENDING_DELIVERY_INDEX, attemptId);
    if (index !== undefined) await step.tx.delete(PENDING_DELIVERY_INDEX, attemptId, index.version);
  }
  return deliveryView(moved.record as DeliveryRecord);
}

/** Every delivery now pending (in flight here, or interrupted). */
export async function pendingDeliveries(reader: StoreReader): Promise<DeliveryView[]> {
  const views: DeliveryView[] = [];
  for (const { id } of await reader.list(PENDING_DELIVERY_INDEX)) {
    const view = await deliveryOf(reader, id);
    if (view?.state === DeliveryState.pending) views.push(view);
  }
  return views;
}
