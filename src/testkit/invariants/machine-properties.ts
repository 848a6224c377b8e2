import { AttemptState, OccurrenceState, type RunState } from '../../../machines/index.js';
import { getShortestPaths } from '@xstate/graph';
import fc from 'fast-check';
import { createActor, transition, type AnyMachineSnapshot, type AnyStateMachine } from 'xstate';
import type { ProvableMachine } from '../../spec/soundness.js';
import {
  extensionSpec,
  generatedMachine,
  lifecycleSpec,
  machineSpec,
  sampleEvent,
  sampleInputs,
  specOf,
  type AnyMachineId,
} from './machine-samples.js';

type Event = { type: string; actor: string; now: string; permit?: string };

/**
 * The machine with test guards: the actor check stays real; a contract guard passes unless the event permits
 * another.
 */
export function permissive(machine: AnyStateMachine, spec: ProvableMachine): AnyStateMachine {
  const ids = new Set(spec.transitions.flatMap((t) => (t.guard ? [t.guard.id] : [])));
  return machine.provide({
    guards: Object.fromEntries(
      [...ids].map((g) => [
        g,
        ({ event }: { event: { permit?: string } }) => event.permit === undefined || event.permit === g,
      ]),
    ),
  });
}

function eventsOf(spec: ProvableMachine): Event[] {
  const names = [...new Set(spec.transitions.map((t) => t.on))];
  return [
    ...names.flatMap((name) => lifecycleSpec.actors.map((actor) => sampleEvent(name, actor))),
    ...spec.transitions.flatMap((t) => (t.guard ? [{ ...sampleEvent(t.on, t.actor), permit: t.guard.id }] : [])),
  ];
}

const stateOf = (s: AnyMachineSnapshot) => String(s.value);
/** The success state the occurrence, run and attempt machines share: a subject is any one of them. */
const SUCCEEDED = OccurrenceState.succeeded satisfies RunState & AttemptState;

export interface MachinePropertyResult {
  property: string;
  invariant: string;
  machine: AnyMachineId;
  runs: number;
  steps: number;
  problems: string[];
}

/** A machine under test: the generated one by default, or a deliberately broken one for the self-check. */
export interface MachineUnderTest {
  id: AnyMachineId;
  spec: ProvableMachine;
  machine: AnyStateMachine;
}

export function generatedMachines(): MachineUnderTest[] {
  return lifecycleSpec.machines.map((m) => ({ id: m.id, spec: machineSpec(m.id), machine: generatedMachine(m.id) }));
}

/** This project's own extension machines, as generated; walked by the same properties as the contract's. */
export function extensionMachinesUnderTest(): MachineUnderTest[] {
  return extensionSpec.machines.map((m) => ({ id: m.id, spec: specOf(m.id), machine: generatedMachine(m.id) }));
}

/** Edge-keyed shortest paths: a path to every transition, not only to every state. */
function paths(subject: MachineUnderTest) {
  const machine = permissive(subject.machine, subject.spec);
  return getShortestPaths(machine, {
    input: sampleInputs[subject.id] as never,
    events: eventsOf(subject.spec) as never,
    serializeState: (s, e, p) => {
      const from = p === undefined ? '' : stateOf(p as AnyMachineSnapshot);
      return `${from}--${e?.type ?? 'init'}->${stateOf(s as AnyMachineSnapshot)}`;
    },
  }).map((p) => ({
    final: p.state as AnyMachineSnapshot,
    events: p.steps.slice(1).map((s) => s.event as unknown as Event),
    states: p.steps.map((s) => stateOf(s.state as AnyMachineSnapshot)),
  }));
}

/** Random walks of sample events (legal and illegal, every actor) from the initial state. */
function walk(
  subject: MachineUnderTest,
  picks: number[],
): Array<{ from: AnyMachineSnapshot; event: Event; to: AnyMachineSnapshot }> {
  const machine = permissive(subject.machine, subject.spec);
  const events = eventsOf(subject.spec);
  let s = createActor(machine, { input: sampleInputs[subject.id] }).getSnapshot() as AnyMachineSnapshot;
  const steps = [];
  for (const pick of picks) {
    const event = events[pick % events.length]!;
    const [next] = transition(machine, s, event as never);
    steps.push({ from: s, event, to: next as AnyMachineSnapshot });
    s = next as AnyMachineSnapshot;
  }
  return steps;
}

/** Evidence a machine's `succeeded` needs; extension machines have no `succeeded` state. */
const EVIDENCE: Partial<Record<AnyMachineId, string[]>> = {
  'attempt.v1': ['runtime_started', 'run_settled'],
  'occurrence.v1': ['runtime_started', 'run_settled'],
  'run.v1': ['attempt_started', 'attempt_settled'],
  'definition.v1': [],
};

function emptyResult(property: string, invariant: string, machine: AnyMachineId): MachinePropertyResult {
  return { property, invariant, machine, runs: 0, steps: 0, problems: [] };
}

type Path = ReturnType<typeof paths>[number];

/** terminal-no-regress over enumerated paths: no sample event, legal or not, moves a terminal snapshot. */
function terminalNoRegress(subject: MachineUnderTest, all: Path[]): MachinePropertyResult {
  const terminal = new Set(subject.spec.terminal);
  const events = eventsOf(subject.spec);
  const machine = permissive(subject.machine, subject.spec);
  const regress = emptyResult('no event leaves a terminal state', 'terminal-no-regress', subject.id);
  for (const path of all.filter((p) => terminal.has(stateOf(p.final)))) {
    regress.runs += 1;
    for (const event of events) {
      regress.steps += 1;
      const [next] = transition(machine, path.final, event as never);
      if (next !== path.final || path.final.can(event))
        regress.problems.push(`${subject.id}: ${stateOf(path.final)} accepts ${event.type} from ${event.actor}`);
    }
  }
  return regress;
}

/** no-evidence-no-success over enumerated paths: every path to succeeded passed the machine's evidence events. */
function pathsNeedEvidence(subject: MachineUnderTest, all: Path[], evidence: MachinePropertyResult): void {
  for (const path of all) {
    evidence.runs += 1;
    evidence.steps += path.events.length;
    if (stateOf(path.final) === SUCCEEDED) {
      for (const needed of EVIDENCE[subject.id] ?? [])
        if (!path.events.some((e) => e.type === needed))
          evidence.problems.push(
            `${subject.id}: succeeded via ${path.events.map((e) => e.type).join(' > ')} without ${needed}`,
          );
    }
  }
}

interface WalkResults {
  refused: MachinePropertyResult;
  evidence: MachinePropertyResult;
  ambiguous: MachinePropertyResult;
}

/** One random walk; a broken property throws so fast-check shrinks the walk to a minimal event sequence. */
function checkWalk(subject: MachineUnderTest, picks: number[], { refused, evidence, ambiguous }: WalkResults): void {
  refused.runs += 1;
  ambiguous.runs += 1;
  const seen: string[] = [];
  for (const step of walk(subject, picks)) {
    refused.steps += 1;
    ambiguous.steps += 1;
    if (!step.from.can(step.event) && step.to !== step.from)
      throw new WalkProblem(refused, `${subject.id}: refused ${step.event.type} changed the snapshot`);
    if (step.to !== step.from) seen.push(step.event.type);
    if (
      step.to !== step.from &&
      stateOf(step.from) === OccurrenceState.recovery_required &&
      !(step.event.actor === 'command_handler' && step.event.type.startsWith('operator_recovery'))
    ) {
      throw new WalkProblem(
        ambiguous,
        `${subject.id}: ${step.event.type} by ${step.event.actor} left recovery_required`,
      );
    }
    if (stateOf(step.to) === SUCCEEDED && step.to !== step.from) {
      evidence.steps += 1;
      for (const needed of EVIDENCE[subject.id] ?? [])
        if (!seen.includes(needed))
          throw new WalkProblem(evidence, `${subject.id}: a walk succeeded without ${needed}`);
    }
  }
}

/** Seeded random walks; a failure is recorded on the property it broke, with the shrunk walk spelled out. */
function checkWalks(subject: MachineUnderTest, options: { runs: number; seed: number }, results: WalkResults): void {
  const walks = fc.array(fc.nat(10_000), { minLength: 1, maxLength: 40 });
  const report = fc.check(
    fc.property(walks, (picks) => checkWalk(subject, picks, results)),
    { seed: options.seed, numRuns: options.runs },
  );
  if (!report.failed) return;
  const problem = report.errorInstance instanceof WalkProblem ? report.errorInstance : undefined;
  const events = eventsOf(subject.spec);
  const shrunk = (report.counterexample?.[0] as number[] | undefined)
    ?.map((pick) => {
      const e = events[pick % events.length]!;
      return `${e.type}(${e.actor})`;
    })
    .join(' > ');
  (problem?.result ?? results.refused).problems.push(
    `${problem?.message ?? String(report.errorInstance)} [seed ${report.seed}, minimal walk: ${shrunk ?? '?'}]`,
  );
}

/**
 * The machine-level properties over enumerated paths and seeded random walks: terminal-no-regress,
 * refused events leave the snapshot identical, no-evidence-no-success, ambiguous-never-auto-retried,
 * one-attempt-one-session.
 */
export function checkMachineProperties(
  subjects: MachineUnderTest[],
  options: { runs: number; seed: number },
): MachinePropertyResult[] {
  const results: MachinePropertyResult[] = [];
  for (const subject of subjects) {
    const all = paths(subject);
    const regress = terminalNoRegress(subject, all);
    const walked: WalkResults = {
      refused: emptyResult('a refused event leaves the snapshot identical', 'terminal-no-regress', subject.id),
      evidence: emptyResult('success only after runtime evidence', 'no-evidence-no-success', subject.id),
      ambiguous: emptyResult(
        'only the operator opens work after ambiguity',
        'ambiguous-never-auto-retried',
        subject.id,
      ),
    };
    pathsNeedEvidence(subject, all, walked.evidence);
    checkWalks(subject, options, walked);
    results.push(regress, walked.refused, walked.evidence, walked.ambiguous);
    if (subject.id === 'attempt.v1') results.push(secondSessionProperty(subject, options));
  }
  return results;
}

class WalkProblem extends Error {
  constructor(
    readonly result: MachinePropertyResult,
    message: string,
  ) {
    super(message);
  }
}

/** An attempt with its first session bound, and (when `observing`) its evidence stream open. */
function boundAttempt(subject: MachineUnderTest, now: string, observing: boolean): AnyMachineSnapshot {
  let s = createActor(subject.machine, { input: sampleInputs[subject.id] }).getSnapshot() as AnyMachineSnapshot;
  for (const e of [
    { type: 'dispatch', actor: 'dispatcher', now, dispatchGeneration: 1, fenceGeneration: 1 },
    { type: 'runtime_started', actor: 'dispatcher', now, sessionId: 'session-1', dispatchGeneration: 1 },
    ...(observing
      ? [{ type: 'evidence_stream_open', actor: 'worker', now, sessionId: 'session-1', cursors: { logCursor: '0' } }]
      : []),
  ]) {
    s = transition(subject.machine, s, e as never)[0] as AnyMachineSnapshot;
  }
  return s;
}

/** With the real guards: once a session is bound, no second bind of any shape is accepted, and nothing changes. */
function secondSessionProperty(
  subject: MachineUnderTest,
  options: { runs: number; seed: number },
): MachinePropertyResult {
  const result = emptyResult(
    'a second session bind is refused and changes nothing',
    'one-attempt-one-session',
    subject.id,
  );
  const now = '2026-03-01T09:00:00.000Z';
  fc.assert(
    fc.property(
      fc.string({ minLength: 1, maxLength: 20 }),
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom(...lifecycleSpec.actors),
      fc.boolean(),
      (secondSession, generation, actor, observing) => {
        result.runs += 1;
        const s = boundAttempt(subject, now, observing);
        const bound = stateOf(s);
        if (bound !== (observing ? AttemptState.observing : AttemptState.started))
          result.problems.push(`${subject.id}: could not bind the first session (${bound})`);
        const second = {
          type: 'runtime_started',
          actor,
          now,
          sessionId: secondSession,
          dispatchGeneration: generation,
        };
        result.steps += 1;
        const [next] = transition(subject.machine, s, second as never);
        if (s.can(second as never) || next !== s)
          result.problems.push(
            `${subject.id}: a second bind (${secondSession}, generation ${generation}, ${actor}) was accepted in ` +
              `${bound}`,
          );
      },
    ),
    { seed: options.seed, numRuns: options.runs },
  );
  return result;
}
