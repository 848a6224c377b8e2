import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ContractActor } from '../contract/vocabulary.js';
import { parseSpecDocument, type SpecTransition } from './lifecycle-spec.js';
import { packageRoot } from '../contract/package-root.js';

/**
 * This project's own extension machines: lifecycles the engine keeps beside the contract's four. They are not
 * part of coven.automations.v1; their spec lives in its own file under spec/coven-automata/.
 */
export type ExtensionMachineId =
  | 'x-coven-automata.outbox.v1'
  | 'x-coven-automata.run-hold.v1'
  | 'x-coven-automata.quarantine.v1'
  | 'x-coven-automata.delivery.v1';

/** One extension machine; the same shape as a contract machine plus a description of what it models. */
export interface ExtensionMachine {
  id: ExtensionMachineId;
  /** Kebab-case; names the generated file (`machines/<entity>.ts`) and guard module (`src/guards/<entity>.ts`). */
  entity: string;
  description: string;
  initial: string;
  states: string[];
  terminal: string[];
  transitions: SpecTransition[];
}

export interface ExtensionSpec {
  schemaVersion: 'x-coven-automata.v1';
  extends: 'coven.automations.v1';
  source: string;
  actors: ContractActor[];
  machines: ExtensionMachine[];
}

export const EXTENSION_SPEC_DIR = join('spec', 'coven-automata', 'v1');
export const EXTENSION_SPEC_FILE = join(EXTENSION_SPEC_DIR, 'extension-machines.json');
const EXTENSION_SCHEMA_FILE = join(EXTENSION_SPEC_DIR, 'extension-machines.schema.json');

let compiledValidator: ReturnType<Ajv2020['compile']> | undefined;

function validator(): ReturnType<Ajv2020['compile']> {
  if (compiledValidator === undefined) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), EXTENSION_SCHEMA_FILE), 'utf8')) as object;
    compiledValidator = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
  }
  return compiledValidator;
}

/** Parses and schema-validates an extension spec document; refuses anything else, naming each offending path. */
export function parseExtensionSpec(text: string, file = EXTENSION_SPEC_FILE): ExtensionSpec {
  return parseSpecDocument<ExtensionSpec>(text, file, validator());
}

/** Loads the package's `extension-machines.json` (or another file, for tooling and tests). */
export function loadExtensionSpec(file = join(packageRoot(), EXTENSION_SPEC_FILE)): ExtensionSpec {
  return parseExtensionSpec(readFileSync(file, 'utf8'), file);
}

export function extensionMachine(spec: ExtensionSpec, id: ExtensionMachineId): ExtensionMachine {
  const machine = spec.machines.find((m) => m.id === id);
  if (machine === undefined) throw new Error(`extension spec has no machine ${id}`);
  return machine;
}
