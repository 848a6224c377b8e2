import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { ContractActor, EntityKind } from '../contract/vocabulary.js';
import { packageRoot, SPEC_DIR } from '../contract/package-root.js';

export type MachineId = 'definition.v1' | 'occurrence.v1' | 'run.v1' | 'attempt.v1';

export interface SpecGuard {
  /** Stable camelCase id; the guard catalogue implements exactly one predicate per id. */
  id: string;
  /** The contract page's guard text, verbatim. */
  text: string;
}

export interface SpecTransition {
  from: string;
  to: string;
  on: string;
  actor: ContractActor;
  guard?: SpecGuard;
}

export interface SpecMachine {
  id: MachineId;
  entity: EntityKind;
  initial: string;
  states: string[];
  terminal: string[];
  transitions: SpecTransition[];
}

export interface SpecInvariant {
  id: string;
  statement: string;
}

export interface LifecycleSpec {
  schemaVersion: 'coven.automations.v1';
  source: string;
  actors: ContractActor[];
  machines: SpecMachine[];
  invariants: SpecInvariant[];
}

/** A spec file that is not valid JSON or does not match state-machines.schema.json. */
export class SpecFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is not a valid lifecycle spec:\n  ${problems.join('\n  ')}`);
    this.name = 'SpecFileError';
  }
}

export { SPEC_DIR };
export const SPEC_FILE = join(SPEC_DIR, 'state-machines.json');
const SCHEMA_FILE = join(SPEC_DIR, 'state-machines.schema.json');

let compiledValidator: ReturnType<Ajv2020['compile']> | undefined;

function validator(): ReturnType<Ajv2020['compile']> {
  if (compiledValidator === undefined) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), SCHEMA_FILE), 'utf8')) as object;
    compiledValidator = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
  }
  return compiledValidator;
}

/** One schema error as `<path>: <message>`, naming the offending field or the allowed values. */
export function describeSchemaError(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(root)' : error.instancePath;
  const extra =
    error.keyword === 'additionalProperties'
      ? ` '${String((error.params as { additionalProperty: string }).additionalProperty)}'`
      : error.keyword === 'enum'
        ? ` ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues)}`
        : '';
  return `${where}: ${error.message ?? error.keyword}${extra}`;
}

/**
 * Parses and schema-validates a lifecycle spec document. Refuses anything that is not valid JSON or
 * does not match the spec schema, naming each offending path.
 */
export function parseLifecycleSpec(text: string, file = SPEC_FILE): LifecycleSpec {
  return parseSpecDocument<LifecycleSpec>(text, file, validator());
}

/** A spec document parsed and checked against its schema's validator, or a SpecFileError naming each path. */
export function parseSpecDocument<T>(text: string, file: string, validate: ReturnType<Ajv2020['compile']>): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SpecFileError(file, [`(root): not valid JSON (${(error as Error).message})`]);
  }
  if (!validate(value)) throw new SpecFileError(file, (validate.errors ?? []).map(describeSchemaError));
  return value as T;
}

/** Loads the package's authoritative `state-machines.json` (or another file, for tooling and tests). */
export function loadLifecycleSpec(file = join(packageRoot(), SPEC_FILE)): LifecycleSpec {
  return parseLifecycleSpec(readFileSync(file, 'utf8'), file);
}

export function specMachine(spec: LifecycleSpec, id: MachineId): SpecMachine {
  const machine = spec.machines.find((m) => m.id === id);
  if (machine === undefined) throw new Error(`lifecycle spec has no machine ${id}`);
  return machine;
}
