import type { AnyStateMachine } from 'xstate';
import { machinesInUse } from './machine-set.js';
import { QuarantineState } from '../../machines/extension-states.js';
import { createEntity, transitionEntity } from '../actors/entity-transition.js';
import type { ContractActor } from '../contract/vocabulary.js';
import type { QuarantineCause, QuarantineContext } from '../guards/quarantine.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { isEntityData, rewriteLegacyEntity } from './legacy-entities.js';
import type { StepContext } from './lifecycle.js';
import { KINDS } from './records.js';

/** Read at each step: an engine may run on machines built from a user's spec (see runOnMachines). */
const machine = (): AnyStateMachine => machinesInUse().quarantine;

/** An automation's quarantine read through x-coven-automata.quarantine.v1. */
export interface QuarantineView {
  state: QuarantineState;
  /** When the current quarantine began; null unless quarantined. */
  since: string | null;
  reason: string | null;
}

const CLEAR: QuarantineView = { state: QuarantineState.clear, since: null, reason: null };

/**
 * The committed quarantine of a record, in either shape: the machine's, or the bare `{since, reason}` that
 * stores written before the quarantine had a machine kept while (and only while) an automation was quarantined.
 */
export function quarantineView(record: StoredRecord<unknown> | undefined): QuarantineView {
  if (record === undefined) return CLEAR;
  if (isEntityData(record.data)) {
    const { value, context } = record.data.snapshot;
    const c = context as unknown as QuarantineContext;
    return { state: value as QuarantineState, since: c.since, reason: c.reason };
  }
  const legacy = record.data as { since: string; reason: string };
  return { state: QuarantineState.quarantined, since: legacy.since, reason: legacy.reason };
}

export async function readQuarantine(reader: StoreReader, automationId: string): Promise<QuarantineView> {
  return quarantineView(await reader.get(KINDS.quarantine, automationId));
}

/** The automation is quarantined: its quarantine machine is in `quarantined`. */
export async function isQuarantined(reader: StoreReader, automationId: string): Promise<boolean> {
  return (await readQuarantine(reader, automationId)).state === QuarantineState.quarantined;
}

/**
 * The automation's quarantine record in machine form: created in `clear` when it has none, or rewritten
 * from the pre-machine shape (first touch of a legacy store) in the state that shape meant.
 */
async function ensureRecord(tx: StoreTransaction, automationId: string): Promise<void> {
  const record = await tx.get(KINDS.quarantine, automationId);
  if (record === undefined) {
    await createEntity(tx, machine(), KINDS.quarantine, automationId, { automationId }, {});
    return;
  }
  if (isEntityData(record.data)) return;
  const view = quarantineView(record);
  const context: QuarantineContext = { automationId, since: view.since, reason: view.reason };
  await rewriteLegacyEntity(
    tx,
    machine(),
    KINDS.quarantine,
    automationId,
    record.version,
    view.state,
    { ...context },
    {},
  );
}

/**
 * Quarantines an automation for a proven cause, unless it already is (or its definition was tombstoned):
 * a second cause while quarantined changes nothing. Returns whether this call imposed it. No changefeed
 * event: the changefeed carries the contract's event kinds only.
 */
export async function imposeQuarantine(
  step: StepContext,
  automationId: string,
  event: { actor: ContractActor; reason: string; cause: QuarantineCause },
): Promise<boolean> {
  if ((await readQuarantine(step.tx, automationId)).state !== QuarantineState.clear) return false;
  await ensureRecord(step.tx, automationId);
  await transitionEntity(step.tx, machine(), KINDS.quarantine, automationId, {
    type: 'quarantine_imposed',
    ...event,
    now: step.now,
  });
  return true;
}

/**
 * Sends a quarantine event other than imposition (lift, definition tombstoned). ILLEGAL_TRANSITION, committing
 * nothing, when the machine refuses it, e.g. a lift of an automation that is not quarantined. Returns the
 * quarantine as it was before the event.
 */
export async function moveQuarantine(
  step: StepContext,
  automationId: string,
  event: { type: 'quarantine_lifted' | 'quarantine_definition_tombstoned'; actor: ContractActor },
): Promise<QuarantineView> {
  const before = await readQuarantine(step.tx, automationId);
  await ensureRecord(step.tx, automationId);
  await transitionEntity(step.tx, machine(), KINDS.quarantine, automationId, { ...event, now: step.now });
  return before;
}
