import type { LifecycleSpec, MachineId, SpecMachine, SpecTransition } from '../../spec/lifecycle-spec.js';

/** A deliberate defect in the contract spec, and the structural property (with its invariant) that must catch it. */
export interface PlantedSpecEdit {
  name: string;
  invariant: string;
  property: string;
  edit: (spec: LifecycleSpec) => void;
}

const machine = (spec: LifecycleSpec, id: MachineId): SpecMachine => spec.machines.find((m) => m.id === id)!;

/** A guard of its own, so the edit stays sound: alternatives on one event must all be guarded. */
const planted = (id: string) => ({ id, text: 'planted by the self-check' });

const add = (id: MachineId, t: SpecTransition) => (spec: LifecycleSpec) => void machine(spec, id).transitions.push(t);

function find(spec: LifecycleSpec, id: MachineId, from: string, to: string): SpecTransition {
  const t = machine(spec, id).transitions.find((x) => x.from === from && x.to === to);
  if (t === undefined) throw new Error(`planted edit: ${id} has no ${from} -> ${to}`);
  return t;
}

const dropGuard = (id: MachineId, from: string, to: string) => (spec: LifecycleSpec) =>
  void delete find(spec, id, from, to).guard;

/** The state stops being terminal, and gains an exit. */
const reopen = (id: MachineId, state: string, t: SpecTransition) => (spec: LifecycleSpec) => {
  const m = machine(spec, id);
  m.terminal = m.terminal.filter((s) => s !== state);
  m.transitions.push(t);
};

/**
 * One planted defect or more for every structural property in `invariant-rules.json`; the self-check applies each to
 * a copy of the spec and expects the named property to fail. Each edit keeps the static proofs holding where it
 * can, so only the invariant's own property stands between it and a pass.
 */
export const PLANTED_SPEC_EDITS: PlantedSpecEdit[] = [
  {
    name: 'spec: an exit from a terminal state (occurrence succeeded → running)',
    invariant: 'terminal-no-regress',
    property: 'terminal-states-stay-terminal',
    edit: add('occurrence.v1', { from: 'succeeded', to: 'running', on: 'runtime_started', actor: 'dispatcher' }),
  },
  {
    name: 'spec: run ambiguous no longer terminal, and left by a new attempt',
    invariant: 'terminal-no-regress',
    property: 'terminal-states-stay-terminal',
    edit: reopen('run.v1', 'ambiguous', {
      from: 'ambiguous',
      to: 'running',
      on: 'attempt_started',
      actor: 'dispatcher',
    }),
  },
  {
    name: 'spec: an attempt settles succeeded on the dispatcher saying so (dispatching → succeeded)',
    invariant: 'no-evidence-no-success',
    property: 'success-only-on-evidence',
    edit: add('attempt.v1', { from: 'dispatching', to: 'succeeded', on: 'launch_confirmed', actor: 'dispatcher' }),
  },
  {
    name: 'spec: lost evidence becomes success (attempt observing → succeeded on evidence_lost)',
    invariant: 'no-evidence-no-success',
    property: 'evidence-loss-never-succeeds',
    edit: add('attempt.v1', {
      from: 'observing',
      to: 'succeeded',
      on: 'evidence_lost',
      actor: 'scheduler',
      guard: planted('lostButFine'),
    }),
  },
  {
    name: 'spec: the operator recovers straight into running, so success needs no new runtime start',
    invariant: 'no-evidence-no-success',
    property: 'success-passes-runtime-evidence',
    edit: add('occurrence.v1', {
      from: 'recovery_required',
      to: 'running',
      on: 'operator_recovery_attempt',
      actor: 'command_handler',
      guard: planted('recoverIntoRunning'),
    }),
  },
  {
    name: 'spec: an unguarded path into dispatching that skips the claim (eligible → dispatching)',
    invariant: 'adoption-before-side-effects',
    property: 'execution-passes-claim-and-adoption',
    edit: add('occurrence.v1', { from: 'eligible', to: 'dispatching', on: 'attempt_adopted', actor: 'dispatcher' }),
  },
  {
    name: "spec: the run's start loses its adoption guard",
    invariant: 'adoption-before-side-effects',
    property: 'execution-entries-are-adoptions',
    edit: dropGuard('run.v1', 'accepted', 'running'),
  },
  {
    name: 'spec: the claim loses its compare-and-set guard',
    invariant: 'one-fence-one-run',
    property: 'claim-is-compare-and-set',
    edit: dropGuard('occurrence.v1', 'eligible', 'claimed'),
  },
  {
    name: 'spec: a second run adopted on the same claim (occurrence running → dispatching on attempt_adopted)',
    invariant: 'one-fence-one-run',
    property: 'one-adoption-per-claim',
    edit: add('occurrence.v1', { from: 'running', to: 'dispatching', on: 'attempt_adopted', actor: 'dispatcher' }),
  },
  {
    name: 'spec: a started attempt dispatched again (attempt started → dispatching)',
    invariant: 'one-attempt-one-session',
    property: 'one-session-per-attempt',
    edit: add('attempt.v1', { from: 'started', to: 'dispatching', on: 'dispatch', actor: 'dispatcher' }),
  },
  {
    name: 'spec: a running occurrence cancelled on the request alone (its acknowledgment guard dropped)',
    invariant: 'cancellation-is-a-request',
    property: 'cancelled-only-on-acknowledgment',
    edit: dropGuard('occurrence.v1', 'running', 'cancelled'),
  },
  {
    name: 'spec: a started attempt cancelled before the runtime acknowledges (started → cancelled)',
    invariant: 'cancellation-is-a-request',
    property: 'cancelled-only-on-acknowledgment',
    edit: add('attempt.v1', { from: 'started', to: 'cancelled', on: 'cancel_acknowledged', actor: 'command_handler' }),
  },
  {
    name: 'spec: a retry reopens the prior attempt (attempt started → adopted on automatic_retry)',
    invariant: 'retry-new-attempt',
    property: 'retries-open-work-as-listed',
    edit: add('attempt.v1', { from: 'started', to: 'adopted', on: 'automatic_retry', actor: 'dispatcher' }),
  },
  {
    name: 'spec: a refused launch replans the occurrence without a retry (dispatching → planned)',
    invariant: 'retry-new-attempt',
    property: 'work-reopens-only-by-retry',
    edit: add('occurrence.v1', {
      from: 'dispatching',
      to: 'planned',
      on: 'launch_refused',
      actor: 'dispatcher',
      guard: planted('replanRefusedLaunch'),
    }),
  },
  {
    name: 'spec: the dispatcher retries recovery_required work automatically (recovery_required → dispatching)',
    invariant: 'ambiguous-never-auto-retried',
    property: 'ambiguity-exits-by-operator-only',
    edit: add('occurrence.v1', {
      from: 'recovery_required',
      to: 'dispatching',
      on: 'automatic_retry',
      actor: 'dispatcher',
      guard: planted('retryAmbiguous'),
    }),
  },
  {
    name: 'spec: recovering work redispatched by the scheduler (recovering → dispatching)',
    invariant: 'ambiguous-never-auto-retried',
    property: 'ambiguity-exits-by-operator-only',
    edit: add('occurrence.v1', { from: 'recovering', to: 'dispatching', on: 'lease_renewed', actor: 'scheduler' }),
  },
  {
    name: 'spec: a revision supersedes a running occurrence (running → superseded)',
    invariant: 'revision-pins-history',
    property: 'definition-changes-leave-work-alone',
    edit: add('occurrence.v1', {
      from: 'running',
      to: 'superseded',
      on: 'definition_superseded',
      actor: 'scheduler',
    }),
  },
  {
    name: 'spec: the scheduler tombstones a paused definition',
    invariant: 'tombstone-preserves-history',
    property: 'tombstone-by-command-and-final',
    edit: (spec) => void (find(spec, 'definition.v1', 'paused', 'tombstoned').actor = 'scheduler'),
  },
  {
    name: 'spec: a tombstoned definition re-enabled (tombstoned no longer terminal)',
    invariant: 'tombstone-preserves-history',
    property: 'tombstoned-is-terminal',
    edit: reopen('definition.v1', 'tombstoned', {
      from: 'tombstoned',
      to: 'paused',
      on: 'definition_reenabled',
      actor: 'command_handler',
    }),
  },
];
