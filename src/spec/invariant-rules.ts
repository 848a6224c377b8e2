import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ContractActor } from '../contract/vocabulary.js';
import { packageRoot } from '../contract/package-root.js';
import { parseSpecDocument, type MachineId } from './lifecycle-spec.js';

/** What every structural rule carries: the invariant it belongs to and the contract sentence it comes from. */
interface RuleBase {
  /** Kebab-case; the property's name in reports and in the self-check. */
  id: string;
  invariant: string;
  /** The sentence of the coven.automations.v1 lifecycle page the rule is derived from, verbatim. */
  contract: string;
  /** What the rule demands of the graph, in a sentence. */
  why: string;
}

/** The contract's terminal states stay declared terminal and no transition leaves them. */
export interface TerminalRule extends RuleBase {
  kind: 'terminal';
  terminal: Partial<Record<MachineId, string[]>>;
}

/** One transition the contract permits; a field left out matches anything, `guard` names the guard it must carry. */
export interface AllowedTransition {
  machine?: MachineId;
  from?: string;
  to?: string;
  on?: string;
  actor?: ContractActor;
  guard?: string;
}

/** Every transition the selection picks out must be one of the allowed rows. `on` may end in `_*` (a prefix). */
export interface OnlyRule extends RuleBase {
  kind: 'only';
  machines: MachineId[];
  select: { from?: string[]; to?: string[]; on?: string[] };
  allowed: AllowedTransition[];
}

/** A path obligation: entering an `into` state requires the event groups, in order, since the last `resetAt`. */
export interface PathObligation {
  machine: MachineId;
  into: string[];
  /** Each group is a set of alternative events; the groups must be passed in order. */
  passes: string[][];
  resetAt: string[];
}

/** On every path from the initial state, each obligation holds. */
export interface PathRule extends RuleBase {
  kind: 'path';
  paths: PathObligation[];
}

/** On every path, each of the events occurs at most once between two `resetOn` events. */
export interface OnceRule extends RuleBase {
  kind: 'once';
  machine: MachineId;
  events: string[];
  resetOn: string[];
}

export type StructuralRule = TerminalRule | OnlyRule | PathRule | OnceRule;

export interface InvariantRules {
  schemaVersion: 'x-coven-automata.invariant-rules.v1';
  spec: 'coven.automations.v1';
  source: string;
  rules: StructuralRule[];
}

export const INVARIANT_RULES_FILE = join('spec', 'coven-automata', 'v1', 'invariant-rules.json');
const RULES_SCHEMA_FILE = join('spec', 'coven-automata', 'v1', 'invariant-rules.schema.json');

let compiledValidator: ReturnType<Ajv2020['compile']> | undefined;

function validator(): ReturnType<Ajv2020['compile']> {
  if (compiledValidator === undefined) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), RULES_SCHEMA_FILE), 'utf8')) as object;
    compiledValidator = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
  }
  return compiledValidator;
}

/** Parses and schema-validates an invariant-rules document; refuses anything else, naming each offending path. */
export function parseInvariantRules(text: string, file = INVARIANT_RULES_FILE): InvariantRules {
  return parseSpecDocument<InvariantRules>(text, file, validator());
}

/**
 * Loads the structural rules of the ten invariants (`spec/coven-automata/v1/invariant-rules.json`, or another file).
 *
 * @example
 * ```ts
 * const rules = loadInvariantRules();
 * const problems = checkStructuralProperties(loadLifecycleSpec(), rules).filter((r) => r.problems.length > 0);
 * ```
 */
export function loadInvariantRules(file = join(packageRoot(), INVARIANT_RULES_FILE)): InvariantRules {
  return parseInvariantRules(readFileSync(file, 'utf8'), file);
}
