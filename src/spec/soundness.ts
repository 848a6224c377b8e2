import type { ExtensionSpec } from './extension-spec.js';
import type { LifecycleSpec, SpecMachine, SpecTransition } from './lifecycle-spec.js';

/** One named static proof over the spec; `problems` is empty when it holds. */
export interface SoundnessCheck {
  check: string;
  problems: string[];
}

/** What the static proofs need of a machine, whether the contract's or this project's extension. */
export type ProvableMachine = Pick<SpecMachine, 'initial' | 'states' | 'terminal' | 'transitions'> & { id: string };

export function describeTransition(machine: { id: string }, t: SpecTransition): string {
  return `${machine.id} ${t.from} -> ${t.to} on ${t.on} (${t.actor})`;
}

function reachableFrom(start: string, edges: Map<string, string[]>): Set<string> {
  const seen = new Set([start]);
  const queue = [start];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const to of edges.get(next) ?? []) {
      if (!seen.has(to)) {
        seen.add(to);
        queue.push(to);
      }
    }
  }
  return seen;
}

function edgesOf(machine: ProvableMachine, reverse = false): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const t of machine.transitions) {
    const [a, b] = reverse ? [t.to, t.from] : [t.from, t.to];
    edges.set(a, [...(edges.get(a) ?? []), b]);
  }
  return edges;
}

function machineChecks(machine: ProvableMachine): SoundnessCheck[] {
  const states = new Set(machine.states);
  const terminal = new Set(machine.terminal);
  const checks: SoundnessCheck[] = [];
  const add = (check: string, problems: string[]) => checks.push({ check: `${machine.id}: ${check}`, problems });

  add('declared endpoints', [
    ...(states.has(machine.initial) ? [] : [`initial state '${machine.initial}' is not declared`]),
    ...machine.terminal.filter((s) => !states.has(s)).map((s) => `terminal state '${s}' is not declared`),
    ...machine.transitions.flatMap((t) => [
      ...(states.has(t.from) ? [] : [`${describeTransition(machine, t)}: source '${t.from}' is not a declared state`]),
      ...(states.has(t.to) ? [] : [`${describeTransition(machine, t)}: target '${t.to}' is not a declared state`]),
    ]),
  ]);

  add(
    'no transition leaves a terminal state',
    machine.transitions
      .filter((t) => terminal.has(t.from))
      .map((t) => `${describeTransition(machine, t)} leaves terminal state '${t.from}'`),
  );

  const reachable = reachableFrom(machine.initial, edgesOf(machine));
  add(
    'every state reachable from the initial state',
    machine.states.filter((s) => !reachable.has(s)).map((s) => `state '${s}' is unreachable from '${machine.initial}'`),
  );

  const reverse = edgesOf(machine, true);
  const canTerminate = new Set<string>();
  for (const t of machine.terminal) for (const s of reachableFrom(t, reverse)) canTerminate.add(s);
  add(
    'every non-terminal state can reach a terminal state',
    machine.states
      .filter((s) => !terminal.has(s) && !canTerminate.has(s))
      .map((s) => `state '${s}' cannot reach any terminal state`),
  );

  const withExits = new Set(machine.transitions.map((t) => t.from));
  const exitless = machine.states.filter((s) => !withExits.has(s));
  add('terminal list equals the states without outgoing transitions', [
    ...exitless
      .filter((s) => !terminal.has(s))
      .map((s) => `state '${s}' has no outgoing transition but is not terminal`),
    ...machine.terminal.filter((s) => withExits.has(s)).map((s) => `terminal state '${s}' has outgoing transitions`),
  ]);

  transitionTableChecks(machine, add);
  return checks;
}

/** The transition table itself: no entry twice, and alternatives on one event all guarded. */
function transitionTableChecks(machine: ProvableMachine, add: (check: string, problems: string[]) => void): void {
  const seen = new Set<string>();
  add(
    'no duplicate transitions',
    machine.transitions.flatMap((t) => {
      const key = `${t.from}|${t.to}|${t.on}`;
      if (seen.has(key)) return [`${describeTransition(machine, t)} is listed twice`];
      seen.add(key);
      return [];
    }),
  );

  // Two transitions on one event from one state are alternatives; an unguarded one would shadow the rest.
  const bySourceEvent = new Map<string, SpecTransition[]>();
  for (const t of machine.transitions) {
    const key = `${t.from}|${t.on}`;
    bySourceEvent.set(key, [...(bySourceEvent.get(key) ?? []), t]);
  }
  add(
    'alternatives on one event are all guarded',
    [...bySourceEvent.values()]
      .filter((alternatives) => alternatives.length > 1)
      .flatMap((alternatives) =>
        alternatives
          .filter((t) => t.guard === undefined)
          .map((t) => `${describeTransition(machine, t)} is unguarded but shares its event with another transition`),
      ),
  );
}

function guardTextCheck(machines: readonly ProvableMachine[]): SoundnessCheck {
  const guardText = new Map<string, string>();
  const guardProblems: string[] = [];
  for (const machine of machines) {
    for (const t of machine.transitions) {
      if (t.guard === undefined) continue;
      const key = `${machine.id}#${t.guard.id}`;
      const known = guardText.get(key);
      if (known !== undefined && known !== t.guard.text) {
        guardProblems.push(`${describeTransition(machine, t)}: guard '${t.guard.id}' is reused with different text`);
      }
      guardText.set(key, t.guard.text);
    }
  }
  return { check: 'a guard id names one guard text', problems: guardProblems };
}

/**
 * Runs every static proof the contract's machines must satisfy and returns one entry per check.
 *
 * @example
 * ```ts
 * const failing = checkSpecSoundness(loadLifecycleSpec()).filter((c) => c.problems.length > 0);
 * ```
 */
export function checkSpecSoundness(spec: LifecycleSpec): SoundnessCheck[] {
  const checks = spec.machines.flatMap(machineChecks);

  const ids = spec.machines.map((m) => m.id);
  checks.push({
    check: 'one machine per entity',
    problems: [
      ...ids.filter((id, i) => ids.indexOf(id) !== i).map((id) => `machine '${id}' is declared twice`),
      ...spec.machines
        .filter((m) => m.id !== `${m.entity}.v1`)
        .map((m) => `machine '${m.id}' does not match entity '${m.entity}'`),
    ],
  });

  checks.push(guardTextCheck(spec.machines));

  const invariantIds = spec.invariants.map((i) => i.id);
  checks.push({
    check: 'invariant ids are unique',
    problems: invariantIds
      .filter((id, i) => invariantIds.indexOf(id) !== i)
      .map((id) => `invariant '${id}' is declared twice`),
  });
  return checks;
}

/** Every problem from {@link checkSpecSoundness}, flattened; empty for a sound spec. */
export function specProblems(spec: LifecycleSpec): string[] {
  return checkSpecSoundness(spec).flatMap((c) => c.problems.map((p) => `${c.check}: ${p}`));
}

/**
 * The same static proofs over this project's extension machines, plus what keeps them apart from the contract:
 * ids follow `x-coven-automata.<entity>.v1`, and (given the contract spec) no extension event reuses a contract
 * event name, so an extension event can never be mistaken for a contract one.
 */
export function checkExtensionSoundness(spec: ExtensionSpec, contract?: LifecycleSpec): SoundnessCheck[] {
  const checks = spec.machines.flatMap(machineChecks);
  const ids = spec.machines.map((m) => m.id);
  checks.push({
    check: 'one extension machine per entity',
    problems: [
      ...ids.filter((id, i) => ids.indexOf(id) !== i).map((id) => `machine '${id}' is declared twice`),
      ...spec.machines
        .filter((m) => m.id !== `x-coven-automata.${m.entity}.v1`)
        .map((m) => `machine '${m.id}' does not match entity '${m.entity}'`),
    ],
  });
  checks.push(guardTextCheck(spec.machines));
  if (contract !== undefined) {
    const contractEvents = new Set(contract.machines.flatMap((m) => m.transitions.map((t) => t.on)));
    const contractEntities = new Set<string>(contract.machines.map((m) => m.entity));
    checks.push({
      check: 'extension names do not reuse contract names',
      problems: spec.machines.flatMap((m) => [
        ...(contractEntities.has(m.entity) ? [`machine '${m.id}' reuses contract entity '${m.entity}'`] : []),
        ...m.transitions
          .filter((t) => contractEvents.has(t.on))
          .map((t) => `${describeTransition(m, t)} reuses contract event '${t.on}'`),
      ]),
    });
  }
  return checks;
}

/** Every problem from {@link checkExtensionSoundness}, flattened; empty for a sound extension spec. */
export function extensionSpecProblems(spec: ExtensionSpec, contract?: LifecycleSpec): string[] {
  return checkExtensionSoundness(spec, contract).flatMap((c) => c.problems.map((p) => `${c.check}: ${p}`));
}
