import fc from 'fast-check';
import { createActor, transition, type AnyMachineSnapshot } from 'xstate';
import { permissive, type MachinePropertyResult, type MachineUnderTest } from './machine-properties.js';
import { sampleEvents, sampleInputs, type SampleEvent } from './machine-samples.js';

const stateOf = (s: AnyMachineSnapshot) => String(s.value);

/** Why one step of a walk disagrees with the spec, or undefined when it agrees. */
function stepProblem(subject: MachineUnderTest, from: string, event: SampleEvent, to: string, moved: boolean) {
  const named = subject.spec.transitions.filter(
    (t) =>
      t.from === from &&
      t.on === event.type &&
      t.actor === event.actor &&
      (event.permit === undefined || t.guard === undefined || t.guard.id === event.permit),
  );
  if (moved && !named.some((t) => t.to === to))
    return `${subject.id}: ${event.type} by ${event.actor} moved ${from} -> ${to}, which the spec does not name`;
  // With test guards every named transition's guard passes, so a named transition that did not fire is a refusal.
  if (!moved && named.length > 0)
    return `${subject.id}: ${event.type} by ${event.actor} was refused in ${from}, but the spec names it`;
  return undefined;
}

/**
 * Seeded random walks (every event, from every actor) over each machine with test guards: a step moves the
 * machine exactly when the spec names that transition for that event's actor, and only to the spec's target.
 * So only the named contract actors move a machine, and each of them can.
 */
export function checkActorProperty(
  subjects: MachineUnderTest[],
  options: { runs: number; seed: number },
): MachinePropertyResult[] {
  return subjects.map((subject) => {
    const result: MachinePropertyResult = {
      property: 'only the named actor moves a transition, and only to its spec target',
      invariant: 'terminal-no-regress',
      machine: subject.id,
      runs: 0,
      steps: 0,
      problems: [],
    };
    const machine = permissive(subject.machine, subject.spec);
    const events = sampleEvents(subject.id);
    const report = fc.check(
      fc.property(fc.array(fc.nat(10_000), { minLength: 1, maxLength: 40 }), (picks) => {
        result.runs += 1;
        let s = createActor(machine, { input: sampleInputs[subject.id] }).getSnapshot() as AnyMachineSnapshot;
        for (const pick of picks) {
          const event = events[pick % events.length]!;
          const [next] = transition(machine, s, event as never);
          const to = next as AnyMachineSnapshot;
          result.steps += 1;
          const problem = stepProblem(subject, stateOf(s), event, stateOf(to), to !== s);
          if (problem !== undefined) throw new Error(problem);
          s = to;
        }
      }),
      { seed: options.seed, numRuns: options.runs },
    );
    if (report.failed) result.problems.push(`${String((report.errorInstance as Error).message)} [seed ${report.seed}]`);
    return result;
  });
}
