import type { AnyStateMachine } from 'xstate';
import { extensionMachines, lifecycleMachines } from '../../../machines/index.js';
import { loadExtensionSpec, type ExtensionMachineId, type ExtensionSpec } from '../../spec/extension-spec.js';
import { loadLifecycleSpec, type LifecycleSpec, type MachineId, type SpecMachine } from '../../spec/lifecycle-spec.js';
import type { ProvableMachine } from '../../spec/soundness.js';

/**
 * Sample inputs and events for every machine: the material machine-level properties walk with, both in
 * the invariant suite and in the spec tests.
 */
export const lifecycleSpec: LifecycleSpec = loadLifecycleSpec();

/** This project's own extension machines, walked with the same material as the contract's. */
export const extensionSpec: ExtensionSpec = loadExtensionSpec();

/** A contract machine id or one of this project's extension machine ids. */
export type AnyMachineId = MachineId | ExtensionMachineId;

const isContractId = (id: AnyMachineId): id is MachineId => Object.hasOwn(lifecycleMachines, id);

/** The spec entry of a contract or extension machine. */
export function specOf(id: AnyMachineId): ProvableMachine {
  const m = isContractId(id)
    ? lifecycleSpec.machines.find((x) => x.id === id)
    : extensionSpec.machines.find((x) => x.id === id);
  if (m === undefined) throw new Error(`no machine ${id}`);
  return m;
}

export function machineSpec(id: MachineId, from: LifecycleSpec = lifecycleSpec): SpecMachine {
  const m = from.machines.find((x) => x.id === id);
  if (m === undefined) throw new Error(`no machine ${id}`);
  return m;
}

const spec = lifecycleSpec;

export function generatedMachine(id: AnyMachineId): AnyStateMachine {
  return (isContractId(id) ? lifecycleMachines[id] : extensionMachines[id]) as AnyStateMachine;
}

/**
 * The generated machine with test guards: a contract guard passes unless the event names another guard
 * in `permit`, so the actor-role check decides and guarded alternatives can each be selected.
 */
export function permissiveMachine(id: AnyMachineId): AnyStateMachine {
  const guardIds = new Set(specOf(id).transitions.flatMap((t) => (t.guard ? [t.guard.id] : [])));
  const guards = Object.fromEntries(
    [...guardIds].map((g) => [
      g,
      ({ event }: { event: { permit?: string } }) => event.permit === undefined || event.permit === g,
    ]),
  );
  return generatedMachine(id).provide({ guards });
}

export const FIXED_NOW = '2026-03-01T09:00:00.000Z';

/** Inputs that create a fresh context for each machine. */
export const sampleInputs: Record<AnyMachineId, unknown> = {
  'definition.v1': { automationId: 'nightly-report', revision: 1 },
  'occurrence.v1': {
    occurrenceId: 'nightly-report-1772355600000',
    automationId: 'nightly-report',
    automationRevision: 2,
    definitionDigest: 'a'.repeat(64),
    scheduledFor: FIXED_NOW,
    retryPolicy: {
      maxAttempts: 3,
      backoffPolicy: 'fixed',
      backoffSeconds: 30,
      retryableClasses: ['runtime_unavailable'],
    },
    perRunMinutes: 30,
  },
  'run.v1': {
    runId: 'run-1',
    occurrenceId: 'occ-1',
    automationId: 'nightly-report',
    automationRevision: 2,
    fenceGeneration: 1,
    deadlineAt: '2026-03-01T09:30:00.000Z',
  },
  'attempt.v1': {
    attemptId: 'attempt-run-1-1',
    runId: 'run-1',
    occurrenceId: 'occ-1',
    attemptNumber: 1,
    adoptionKey: 'automation:run-1:1',
    fenceGeneration: 1,
    leaseExpiresAt: '2026-03-01T10:00:00.000Z',
    deadlineAt: '2026-03-01T09:30:00.000Z',
  },
  'x-coven-automata.outbox.v1': {
    attemptId: 'attempt-run-1-1',
    occurrenceId: 'occ-1',
    runId: 'run-1',
    dispatchGeneration: 1,
    committedAt: FIXED_NOW,
  },
  'x-coven-automata.run-hold.v1': { runId: 'run-1', occurrenceId: 'occ-1', deadlineAt: '2026-03-01T09:30:00.000Z' },
  'x-coven-automata.quarantine.v1': { automationId: 'nightly-report' },
  'x-coven-automata.delivery.v1': {
    attemptId: 'attempt-run-1-1',
    runId: 'run-1',
    occurrenceId: 'occ-1',
    automationId: 'nightly-report',
    target: 'reports/nightly.md',
  },
};

/** Payload fields that the context reducers read, so permissive paths keep a well-formed context. */
const payloads: Record<string, Record<string, unknown>> = {
  claim: { expectedGeneration: 0, claimedBy: 'scheduler-1', leaseExpiresAt: '2026-03-01T10:00:00.000Z' },
  attempt_adopted: { attemptId: 'attempt-1', attemptNumber: 1, adoptionKey: 'automation:run-1:1', fenceGeneration: 1 },
  runtime_started: { attemptId: 'attempt-1', sessionId: 'session-1', dispatchGeneration: 1 },
  dispatch: { dispatchGeneration: 1, fenceGeneration: 1 },
  evidence_stream_open: { sessionId: 'session-1', cursors: { eventCursor: 'c0' } },
  attempt_started: {
    attemptId: 'attempt-1',
    attemptNumber: 1,
    adoptionCommittedAt: FIXED_NOW,
    launchIssuedAt: FIXED_NOW,
  },
  operator_recovery_attempt: {
    evidenceDetermination: 'retry_with_new_attempt',
    statement: 'checked the target system; nothing was written',
    attemptId: 'attempt-2',
    attemptNumber: 2,
    adoptionKey: 'automation:run-1:2',
    priorDisposition: 'ambiguous',
    leaseExpiresAt: '2026-03-01T10:00:00.000Z',
  },
  attempt_settled: {
    attempt: { attemptId: 'attempt-1', attemptNumber: 1, state: 'succeeded' },
    receiptRef: 'receipt-1',
    furtherAttemptOpens: false,
  },
  attempt_ambiguous: {
    attempt: { attemptId: 'attempt-1', attemptNumber: 1, state: 'ambiguous' },
    operatorRecoveryResolved: false,
  },
  automatic_retry: {
    priorAttemptNumber: 1,
    priorDisposition: 'failed',
    notBefore: FIXED_NOW,
    failure: { failureClass: 'runtime_unavailable', preOwnership: true },
  },
  operator_retry: { priorAttemptNumber: 1, priorDisposition: 'failed', runId: 'run-1' },
  definition_revise_committed: { revision: 2 },
  definition_activated: { revision: 2 },
  definition_paused: { revision: 2 },
  definition_disabled: { revision: 2 },
  definition_invalidated: { revision: 2 },
  definition_reenabled: { revision: 2 },
  definition_tombstoned: { revision: 2 },
  outbox_send_started: { attemptState: 'dispatching' },
  outbox_release_abandoned: { attemptState: 'cancelled' },
  outbox_work_cancelled: { occurrenceId: 'occ-1', reason: 'occurrence_cancelled' },
  outbox_answer_applied: { sessionKey: 'attempt-run-1-1#1' },
  outbox_send_unstarted: { sessionKey: 'attempt-run-1-1#1', neverStarted: true, fenced: true },
  hold_opened: { attempts: 1, failureClass: 'runtime_unavailable' },
  delivery_started: {
    writer: 'engine-1',
    evidence: { outcome: 'succeeded', exitCode: 0, verified: true },
  },
  delivery_committed: { digest: 'a'.repeat(64) },
  delivery_failed: { reason: 'delivery commit failed: rename refused' },
  delivery_interrupted: { writerStillWriting: false, reason: 'found pending after a restart' },
  hold_retry_accepted: { attemptId: 'attempt-run-1-2' },
  quarantine_imposed: {
    reason: 'retryable runtime_unavailable failures exhausted the retry policy of run run-1',
    cause: {
      kind: 'retries_exhausted',
      retryPolicy: { maxAttempts: 1, backoffPolicy: 'none', retryableClasses: ['runtime_unavailable'] },
      attempts: 1,
      failureClass: 'runtime_unavailable',
    },
  },
};

export function sampleEvent(type: string, actor: string): { type: string; actor: string; now: string } {
  return { type, actor, now: FIXED_NOW, ...(payloads[type] ?? {}) };
}

export type SampleEvent = { type: string; actor: string; now: string; permit?: string };

/**
 * For each event name of a machine: the event as sent by every actor, plus one variant per guarded
 * transition that permits only that transition's guard (see {@link permissiveMachine}).
 */
export function sampleEvents(id: AnyMachineId): SampleEvent[] {
  const m = specOf(id);
  const names = [...new Set(m.transitions.map((t) => t.on))];
  const byActor = names.flatMap((name) => spec.actors.map((actor) => sampleEvent(name, actor)));
  const byGuard = m.transitions.flatMap((t) =>
    t.guard ? [{ ...sampleEvent(t.on, t.actor), permit: t.guard.id }] : [],
  );
  return [...byActor, ...byGuard];
}
