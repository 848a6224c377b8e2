import type { AnyStateMachine } from 'xstate';
import { machinesInUse } from './machine-set.js';
import { RunHoldState, isRunHoldLive } from '../../machines/extension-states.js';
import { createEntity, transitionEntity, type EntityRecord } from '../actors/entity-transition.js';
import type { RunHoldContext, RunHoldEvent, RunHoldInput } from '../guards/run-hold.js';
import type { StoredRecord, StoreReader, StoreTransaction } from '../store/store.js';
import { rewriteLegacyEntity } from './legacy-entities.js';
import type { StepContext } from './lifecycle.js';
import { KINDS, occurrenceContext, type OccurrenceRecord } from './records.js';

/** Read at each step: an engine may run on machines built from a user's spec (see runOnMachines). */
const machine = (): AnyStateMachine => machinesInUse()['run-hold'];

/** A run-hold event as a folder sends it: the engine supplies `now`. */
export type RunHoldSend = RunHoldEvent extends infer E ? (E extends unknown ? Omit<E, 'now'> : never) : never;
/** A run's hold record, as stored. */
export type RunHoldRecord = StoredRecord<EntityRecord<Record<string, never>>>;

/**
 * Stores written before the hold had a machine kept it as `held: true` on the occurrence. Such a flag stands
 * for the hold only while the run has no run-hold record: once one is written it alone is the hold.
 */
function legacyHeld(occurrence: OccurrenceRecord): boolean {
  return (occurrence.data.attributes as { held?: unknown }).held === true;
}

function inputOf(occurrence: OccurrenceRecord, runId: string): RunHoldInput {
  const o = occurrenceContext(occurrence);
  return {
    runId,
    occurrenceId: occurrence.id,
    operatorHold: o.operatorHold,
    deadlineAt: o.deadlineAt,
    retryPolicy: o.retryPolicy,
  };
}

/**
 * The committed state of the hold of an occurrence's active run. A run whose hold never opened has no record
 * and is `clear`, the machine's initial state: records are written only for runs that are held at least once.
 */
export async function runHoldState(reader: StoreReader, occurrence: OccurrenceRecord): Promise<RunHoldState> {
  const runId = occurrence.data.attributes.activeRunRef;
  const record = runId === undefined ? undefined : await reader.get<RunHoldRecord['data']>(KINDS.runHold, runId);
  return holdStateGiven(occurrence, record);
}

/** {@link runHoldState} given the hold record of the occurrence's active run as read (undefined: it has none). */
export function holdStateGiven(occurrence: OccurrenceRecord, record: RunHoldRecord | undefined): RunHoldState {
  if (occurrence.data.attributes.activeRunRef === undefined) return RunHoldState.clear;
  if (record !== undefined) return record.data.snapshot.value as RunHoldState;
  return legacyHeld(occurrence) ? RunHoldState.held : RunHoldState.clear;
}

/** The occurrence's active run is held for an operator retry (the hold machine is in `held`). */
export async function isRunHeld(reader: StoreReader, occurrence: OccurrenceRecord): Promise<boolean> {
  return (await runHoldState(reader, occurrence)) === RunHoldState.held;
}

/**
 * The run's hold record, written now if the run has none: in `held` when the occurrence carries the
 * pre-machine flag (first touch of a legacy store), else in the machine's initial state.
 */
async function ensureRecord(tx: StoreTransaction, occurrence: OccurrenceRecord, runId: string): Promise<void> {
  if ((await tx.get(KINDS.runHold, runId)) !== undefined) return;
  const input = inputOf(occurrence, runId);
  if (!legacyHeld(occurrence)) {
    await createEntity(tx, machine(), KINDS.runHold, runId, input, {});
    return;
  }
  const at = occurrence.data.attributes.updatedAt;
  const context: RunHoldContext = {
    runId,
    occurrenceId: occurrence.id,
    operatorHold: input.operatorHold ?? true,
    deadlineAt: input.deadlineAt,
    retryPolicy: input.retryPolicy!,
    heldSince: at,
    heldFor: null,
  };
  await rewriteLegacyEntity(tx, machine(), KINDS.runHold, runId, null, RunHoldState.held, { ...context }, {});
}

async function send(step: StepContext, runId: string, event: RunHoldSend): Promise<RunHoldState> {
  const moved = await transitionEntity(step.tx, machine(), KINDS.runHold, runId, { ...event, now: step.now });
  return (moved.record as RunHoldRecord).data.snapshot.value as RunHoldState;
}

/**
 * Sends one event to the hold of the occurrence's active run (ILLEGAL_TRANSITION, committing nothing, when
 * the machine refuses), writing the run's hold record first if it has none. Extension entities put nothing
 * on the changefeed.
 */
export async function moveRunHold(
  step: StepContext,
  occurrence: OccurrenceRecord,
  event: RunHoldSend,
): Promise<RunHoldState> {
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId === undefined) throw new Error(`occurrence ${occurrence.id} has no active run to hold`);
  await ensureRecord(step.tx, occurrence, runId);
  return send(step, runId, event);
}

/**
 * Ends the hold of a run that is settling, when it has one that is still live. A run whose hold never opened
 * has nothing to end, and no record is written for it.
 */
export async function endRunHold(
  step: StepContext,
  occurrence: OccurrenceRecord,
  event: RunHoldSend,
): Promise<RunHoldState | undefined> {
  const state = await runHoldState(step.tx, occurrence);
  const runId = occurrence.data.attributes.activeRunRef;
  if (runId === undefined || !isRunHoldLive(state)) return undefined;
  if ((await step.tx.get(KINDS.runHold, runId)) === undefined && !legacyHeld(occurrence)) return undefined;
  return moveRunHold(step, occurrence, event);
}

/**
 * Ends the hold of a settling run known by id, when it has a hold record that is still live. For settlements
 * that cannot follow a pre-machine hold (an ambiguous attempt never opens one), so no occurrence is needed.
 */
export async function endRunHoldOf(
  step: StepContext,
  runId: string,
  event: RunHoldSend,
): Promise<RunHoldState | undefined> {
  const record = await step.tx.get<EntityRecord<unknown>>(KINDS.runHold, runId);
  if (record === undefined || !isRunHoldLive(record.data.snapshot.value)) return undefined;
  return send(step, runId, event);
}
