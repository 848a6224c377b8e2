import type {
  AllowedTransition,
  InvariantRules,
  OnceRule,
  OnlyRule,
  PathObligation,
  StructuralRule,
  TerminalRule,
} from './invariant-rules.js';
import type { LifecycleSpec, MachineId, SpecMachine, SpecTransition } from './lifecycle-spec.js';
import { describeTransition } from './soundness.js';

/** One structural property checked over the spec graph; `problems` is empty when it holds. */
export interface StructuralResult {
  /** The rule's id: the property's name. */
  property: string;
  invariant: string;
  contract: string;
  /** Transitions checked (for `only` and `terminal` rules) or product states explored (for path rules). */
  checked: number;
  problems: string[];
}

type Check = Pick<StructuralResult, 'checked' | 'problems'>;

function machineOf(spec: LifecycleSpec, id: MachineId, problems: string[]): SpecMachine | undefined {
  const machine = spec.machines.find((m) => m.id === id);
  if (machine === undefined) problems.push(`the spec has no machine ${id}`);
  return machine;
}

function checkTerminal(spec: LifecycleSpec, rule: TerminalRule): Check {
  const problems: string[] = [];
  let checked = 0;
  for (const [id, states] of Object.entries(rule.terminal) as Array<[MachineId, string[]]>) {
    const machine = machineOf(spec, id, problems);
    if (machine === undefined) continue;
    checked += machine.transitions.length;
    const path = (t: SpecTransition) => shortestWitness(machine, t);
    for (const state of states) {
      if (!machine.terminal.includes(state)) problems.push(`${id}: '${state}' is no longer declared terminal`);
      for (const t of machine.transitions.filter((x) => x.from === state))
        problems.push(`${describeTransition(machine, t)} leaves the contract's terminal state '${state}': ${path(t)}`);
    }
  }
  return { checked, problems };
}

const matchesEvent = (pattern: string, event: string) =>
  pattern.endsWith('_*') ? event.startsWith(pattern.slice(0, -1)) : pattern === event;

function selected(rule: OnlyRule, t: SpecTransition): boolean {
  const { from, to, on } = rule.select;
  return (
    (from === undefined || from.includes(t.from)) &&
    (to === undefined || to.includes(t.to)) &&
    (on === undefined || on.some((p) => matchesEvent(p, t.on)))
  );
}

function rowMatches(row: AllowedTransition, machine: MachineId, t: SpecTransition, withGuard: boolean): boolean {
  return (
    (row.machine === undefined || row.machine === machine) &&
    (row.from === undefined || row.from === t.from) &&
    (row.to === undefined || row.to === t.to) &&
    (row.on === undefined || row.on === t.on) &&
    (row.actor === undefined || row.actor === t.actor) &&
    (!withGuard || row.guard === undefined || row.guard === t.guard?.id)
  );
}

function disallowed(rule: OnlyRule, machine: SpecMachine, t: SpecTransition): string | undefined {
  if (rule.allowed.some((row) => rowMatches(row, machine.id, t, true))) return undefined;
  const unguarded = rule.allowed.find((row) => rowMatches(row, machine.id, t, false));
  const what = describeTransition(machine, t);
  if (unguarded === undefined) return `${what} is not a transition the contract allows here`;
  const carried = t.guard === undefined ? 'no guard' : `guard '${t.guard.id}'`;
  return `${what} carries ${carried} where the contract requires '${unguarded.guard ?? ''}'`;
}

function checkOnly(spec: LifecycleSpec, rule: OnlyRule): Check {
  const problems: string[] = [];
  let checked = 0;
  for (const id of rule.machines) {
    const machine = machineOf(spec, id, problems);
    if (machine === undefined) continue;
    for (const t of machine.transitions.filter((x) => selected(rule, x))) {
      checked += 1;
      const problem = disallowed(rule, machine, t);
      if (problem !== undefined) problems.push(`${problem}: ${shortestWitness(machine, t)}`);
    }
  }
  return { checked, problems };
}

/** A state of the product of a machine with a small tracker (progress through a path obligation, events seen). */
interface Visit {
  state: string;
  tracker: number;
  via: SpecTransition[];
}

/**
 * Breadth-first over the product graph, so each violation is reported with a shortest path that shows it. `step`
 * gives the tracker after a transition, or a problem; the tracker space is finite, so the search ends.
 */
function explore(
  machine: SpecMachine,
  start: number,
  step: (tracker: number, t: SpecTransition) => number | { problem: string },
  atStart?: (tracker: number) => string | undefined,
): Check {
  const problems = new Map<string, string>();
  const startProblem = atStart?.(start);
  if (startProblem !== undefined) problems.set('(initial)', startProblem);
  const seen = new Set([`${machine.initial}#${start}`]);
  const queue: Visit[] = [{ state: machine.initial, tracker: start, via: [] }];
  for (let visit = queue.shift(); visit !== undefined; visit = queue.shift()) {
    for (const t of machine.transitions.filter((x) => x.from === visit.state)) {
      const next = step(visit.tracker, t);
      const key = `${t.from}|${t.to}|${t.on}|${t.actor}`;
      if (typeof next !== 'number') {
        if (!problems.has(key)) problems.set(key, `${next.problem}: ${witness(machine, [...visit.via, t])}`);
        continue;
      }
      if (seen.has(`${t.to}#${next}`)) continue;
      seen.add(`${t.to}#${next}`);
      queue.push({ state: t.to, tracker: next, via: [...visit.via, t] });
    }
  }
  return { checked: seen.size, problems: [...problems.values()] };
}

/** The shortest path from the initial state that ends with `t`, or `t` alone when its source is unreachable. */
function shortestWitness(machine: SpecMachine, t: SpecTransition): string {
  const via = new Map<string, SpecTransition[]>([[machine.initial, []]]);
  const queue = [machine.initial];
  for (let state = queue.shift(); state !== undefined && !via.has(t.from); state = queue.shift()) {
    for (const next of machine.transitions.filter((x) => x.from === state && !via.has(x.to))) {
      via.set(next.to, [...via.get(state)!, next]);
      queue.push(next.to);
    }
  }
  const path = via.get(t.from);
  return path === undefined ? `${describeTransition(machine, t)} (unreachable)` : witness(machine, [...path, t]);
}

function witness(machine: SpecMachine, via: SpecTransition[]): string {
  return `${machine.id} ${[machine.initial, ...via.map((t) => `-${t.on} (${t.actor})-> ${t.to}`)].join(' ')}`;
}

function checkObligation(spec: LifecycleSpec, obligation: PathObligation): Check {
  const problems: string[] = [];
  const machine = machineOf(spec, obligation.machine, problems);
  if (machine === undefined) return { checked: 0, problems };
  const done = obligation.passes.length;
  const need = (k: number) =>
    obligation.passes
      .slice(k)
      .map((group) => group.join(' or '))
      .join(', then ');
  const entering = (state: string, k: number) =>
    obligation.into.includes(state) && k < done ? `enters '${state}' without passing ${need(k)}` : undefined;
  return explore(
    machine,
    0,
    (k, t) => {
      const next = obligation.resetAt.includes(t.to) ? 0 : k < done && obligation.passes[k]!.includes(t.on) ? k + 1 : k;
      const problem = entering(t.to, next);
      return problem === undefined ? next : { problem };
    },
    (k) => entering(machine.initial, k),
  );
}

function checkOnce(spec: LifecycleSpec, rule: OnceRule): Check {
  const problems: string[] = [];
  const machine = machineOf(spec, rule.machine, problems);
  if (machine === undefined) return { checked: 0, problems };
  return explore(machine, 0, (seen, t) => {
    if (rule.resetOn.includes(t.on)) return 0;
    const bit = rule.events.indexOf(t.on);
    if (bit === -1) return seen;
    if ((seen & (1 << bit)) !== 0) {
      const since = rule.resetOn.length === 0 ? '' : ` since the last ${rule.resetOn.join(' or ')}`;
      return { problem: `'${t.on}' happens a second time${since}` };
    }
    return seen | (1 << bit);
  });
}

function checkRule(spec: LifecycleSpec, rule: StructuralRule): Check {
  switch (rule.kind) {
    case 'terminal':
      return checkTerminal(spec, rule);
    case 'only':
      return checkOnly(spec, rule);
    case 'once':
      return checkOnce(spec, rule);
    case 'path': {
      const results = rule.paths.map((p) => checkObligation(spec, p));
      return {
        checked: results.reduce((n, r) => n + r.checked, 0),
        problems: results.flatMap((r) => r.problems),
      };
    }
  }
}

/**
 * Checks each structural rule over the spec's transition graph as written: every transition and every path, with
 * no guard evaluated, so an edit whose guard is never true in the sampled contexts is still caught.
 *
 * @example
 * ```ts
 * const violated = checkStructuralProperties(loadLifecycleSpec(), loadInvariantRules())
 *   .filter((r) => r.problems.length > 0)
 *   .map((r) => `${r.invariant} (${r.property})`);
 * ```
 */
export function checkStructuralProperties(spec: LifecycleSpec, rules: InvariantRules): StructuralResult[] {
  const declared = new Set(spec.invariants.map((i) => i.id));
  return rules.rules.map((rule) => {
    const { checked, problems } = checkRule(spec, rule);
    const undeclared = declared.has(rule.invariant) ? [] : [`the spec declares no invariant '${rule.invariant}'`];
    return {
      property: rule.id,
      invariant: rule.invariant,
      contract: rule.contract,
      checked,
      problems: [...undeclared, ...problems],
    };
  });
}
