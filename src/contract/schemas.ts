import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { packageRoot, SPEC_DIR } from './package-root.js';
import { ContractError } from './errors.js';

/** The contract object schemas this package owns, by file name (they share one `$id` base). */
export type SchemaName =
  | 'common.schema.json'
  | 'automation-definition.schema.json'
  | 'automation-occurrence.schema.json'
  | 'automation-run.schema.json'
  | 'automation-attempt.schema.json'
  | 'automation-receipt.schema.json'
  | 'command-envelope.schema.json'
  | 'command-response.schema.json'
  | 'error-envelope.schema.json'
  | 'event-envelope.schema.json';

export const SCHEMA_BASE = 'https://coven-automata.dev/spec/coven-automations/v1/';

export interface SchemaVerdict {
  valid: boolean;
  /** One line per problem: `<instance path>: <message>`. */
  problems: string[];
}

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function instance(): Ajv2020 {
  if (ajv === undefined) {
    // Unknown keywords and formats still throw; conditional `then` branches may name `required` properties
    // declared beside them without repeating `type`, which strictRequired/strictTypes would refuse.
    ajv = new Ajv2020({ strict: true, strictRequired: false, strictTypes: false, allErrors: true });
    const dir = join(packageRoot(), SPEC_DIR);
    for (const file of readdirSync(dir).filter(
      (f) => f.endsWith('.schema.json') && f !== 'state-machines.schema.json',
    )) {
      ajv.addSchema(JSON.parse(readFileSync(join(dir, file), 'utf8')) as object);
    }
  }
  return ajv;
}

function describe(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(root)' : error.instancePath;
  const params = error.params as Record<string, unknown>;
  const extra =
    error.keyword === 'additionalProperties'
      ? ` '${String(params.additionalProperty)}'`
      : error.keyword === 'const'
        ? ` ${JSON.stringify(params.allowedValue)}`
        : error.keyword === 'enum'
          ? ` ${JSON.stringify(params.allowedValues)}`
          : '';
  return `${where}: ${error.message ?? error.keyword}${extra}`;
}

/** Validates `value` against one of the contract schemas; compiled once per schema and cached. */
export function validateAgainst(schema: SchemaName, value: unknown): SchemaVerdict {
  let validate = compiled.get(schema);
  if (validate === undefined) {
    validate = instance().getSchema(SCHEMA_BASE + schema);
    if (validate === undefined) throw new Error(`unknown schema ${schema}`);
    compiled.set(schema, validate);
  }
  const valid = validate(value) as boolean;
  return { valid, problems: valid ? [] : [...new Set((validate.errors ?? []).map(describe))] };
}

/** This engine's own extension schemas (spec/coven-automata/v1), by file name. */
export type ExtensionSchemaName =
  | 'schedule-extension.schema.json'
  | 'overlap-extension.schema.json'
  | 'limits-extension.schema.json'
  | 'flow-limits.schema.json';

const EXTENSION_SCHEMA_DIR = join('spec', 'coven-automata', 'v1');
const extensionValidators = new Map<ExtensionSchemaName, ValidateFunction>();

/** Validates the body of one of this engine's `x-coven-automata.*` extensions against its own schema. */
export function validateExtension(schema: ExtensionSchemaName, value: unknown): SchemaVerdict {
  let validate = extensionValidators.get(schema);
  if (validate === undefined) {
    const text = readFileSync(join(packageRoot(), EXTENSION_SCHEMA_DIR, schema), 'utf8');
    validate = new Ajv2020({ strict: true, strictRequired: false, allErrors: true }).compile(
      JSON.parse(text) as object,
    );
    extensionValidators.set(schema, validate);
  }
  const valid = validate(value) as boolean;
  return { valid, problems: valid ? [] : [...new Set((validate.errors ?? []).map(describe))] };
}

/**
 * Refuses the body of an `x-coven-automata.*` extension its schema does not admit: VALIDATION_FAILED naming
 * `field` (by default `extensions.<name>`) and the first 20 problems.
 *
 * @example
 * ```ts
 * requireValidExtension('overlap-extension.schema.json', 'x-coven-automata.overlap.v1', { policy: 'forbid' });
 * ```
 */
export function requireValidExtension(
  schema: ExtensionSchemaName,
  name: string,
  value: unknown,
  field = `extensions.${name}`,
): void {
  const verdict = validateExtension(schema, value);
  if (!verdict.valid)
    throw new ContractError('VALIDATION_FAILED', `${name} failed validation`, {
      field,
      problems: verdict.problems.slice(0, 20),
    });
}
