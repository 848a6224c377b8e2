// What the bad-input property draws: well-formed envelopes, and recipes for damaging one (hostile-input.ts builds them).
import fc from 'fast-check';
import { MAX_COMMAND_BYTES } from '../../src/command-handler/plain-json.js';
import { command, definitionBody } from './commands.js';

const ids = fc.constantFrom('alpha', 'beta', 'gamma', 'missing');
const key = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{7,40}$/);
const revision = fc.integer({ min: 1, max: 6 });

/** Envelopes that are well-formed and aim at real and missing definitions in every lifecycle command. */
export const validEnvelope: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc
    .tuple(ids, key)
    .map(([id, k]) => command('definition.create.v1', { definition: definitionBody(id) }, { adoptionKey: k })),
  fc
    .tuple(ids, revision, key)
    .map(([id, r, k]) =>
      command(
        'definition.revise.v1',
        { definition: definitionBody(id, { revision: r + 1, lifecycleState: 'paused' }) },
        { expectedRevision: r, adoptionKey: k },
      ),
    ),
  fc
    .tuple(
      fc.constantFrom(
        'definition.activate.v1',
        'definition.pause.v1',
        'definition.disable.v1',
        'definition.tombstone.v1',
        'x-coven-automata.definition.reenable.v1',
      ),
      ids,
      revision,
      key,
    )
    .map(([name, id, r, k]) => command(name, { automationId: id }, { expectedRevision: r, adoptionKey: k })),
  fc.tuple(ids, key).map(([id, k]) => command('definition.get.v1', { automationId: id }, { adoptionKey: k })),
  key.map((k) => command('definition.list.v1', { lifecycleState: 'all' }, { adoptionKey: k })),
  fc
    .tuple(ids, key)
    .map(([id, k]) => command('events.read.v1', { stream: { kind: 'automation', id } }, { adoptionKey: k })),
  fc.tuple(ids, key).map(([id, k]) => command('occurrence.runNow.v1', { automationId: id }, { adoptionKey: k })),
);

/**
 * Hostile command input, as a printable recipe: fast-check reports a failing recipe, and {@link buildHostile}
 * makes the live value (a Proxy, a throwing getter, a cycle…) only inside the property, because printing
 * such a value is itself one of the things that throws.
 */
export type Hostility =
  | {
      kind: 'trap';
      trap: 'get' | 'ownKeys' | 'getOwnPropertyDescriptor' | 'has' | 'getPrototypeOf';
      key: string | null;
      thrown: Thrown;
    }
  | { kind: 'revoked' }
  | { kind: 'getter'; key: string | number; thrown: Thrown }
  | { kind: 'flaky'; key: string | number }
  | { kind: 'toJSON'; returns: 'throws' | 'bigint' | 'undefined' | 'revoked'; thrown: Thrown }
  | { kind: 'value'; key: string | number; value: OddValue }
  | { kind: 'cycle'; toRoot: boolean }
  | { kind: 'deep'; depth: number; shape: 'object' | 'array'; asText: boolean }
  | { kind: 'huge'; chars: number; asText: boolean }
  | { kind: 'wide'; items: number };

export type Thrown =
  'error' | 'string' | 'revoked' | 'throwingMessage' | 'null' | 'undefined' | 'symbol' | 'codeLookalike';
export type OddValue =
  | 'bigint'
  | 'symbol'
  | 'function'
  | 'nan'
  | 'infinity'
  | 'undefinedInArray'
  | 'sparseArray'
  | 'date'
  | 'map'
  | 'nullPrototype';
export type RawInput =
  | 'null'
  | 'undefined'
  | 'number'
  | 'boolean'
  | 'bigint'
  | 'symbol'
  | 'function'
  | 'revoked'
  | 'proxyOfFunction'
  | 'badBytes'
  | 'envelopeBytes'
  | 'hugeBytes'
  | 'array'
  | 'date'
  | 'map'
  | 'transparentProxy'
  | 'nullPrototypeEnvelope';

export type HostileRecipe = { at: number; hostility: Hostility } | { raw: RawInput };

const thrown: fc.Arbitrary<Thrown> = fc.constantFrom(
  'error',
  'string',
  'revoked',
  'throwingMessage',
  'null',
  'undefined',
  'symbol',
  'codeLookalike',
);
const fieldKey: fc.Arbitrary<string | number> = fc.oneof(
  fc.nat({ max: 20 }),
  fc.constantFrom('type', 'toJSON', 'schemaVersion', 'command', 'payload', 'then'),
);
const shape = fc.constantFrom('object' as const, 'array' as const);

/** Cheap hostilities are common; the costly ones (megabytes of input, thousands of levels) are rarer. */
export const hostility: fc.Arbitrary<Hostility> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('trap' as const),
      trap: fc.constantFrom(
        'get' as const,
        'ownKeys' as const,
        'getOwnPropertyDescriptor' as const,
        'has' as const,
        'getPrototypeOf' as const,
      ),
      key: fc.option(
        fc.constantFrom(
          'toJSON',
          'type',
          'schemaVersion',
          'command',
          'adoptionKey',
          'payload',
          'definition',
          'automationId',
          'then',
          'constructor',
        ),
      ),
      thrown,
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'revoked' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('getter' as const), key: fieldKey, thrown }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flaky' as const), key: fieldKey }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('toJSON' as const),
      returns: fc.constantFrom('throws' as const, 'bigint' as const, 'undefined' as const, 'revoked' as const),
      thrown,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('value' as const),
      key: fieldKey,
      value: fc.constantFrom<OddValue>(
        'bigint',
        'symbol',
        'function',
        'nan',
        'infinity',
        'undefinedInArray',
        'sparseArray',
        'date',
        'map',
        'nullPrototype',
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cycle' as const), toRoot: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth: fc.constantFrom(100, 127, 128, 129, 200, 1000),
      shape,
      asText: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth: fc.constantFrom(5000, 20_000),
      shape,
      asText: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      chars: fc.constantFrom(100_000, MAX_COMMAND_BYTES + 1, 3 * MAX_COMMAND_BYTES),
      asText: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wide' as const), items: fc.constantFrom(1000, 200_000) }) },
);

export const rawInput: fc.Arbitrary<RawInput> = fc.constantFrom(
  'null',
  'undefined',
  'number',
  'boolean',
  'bigint',
  'symbol',
  'function',
  'revoked',
  'proxyOfFunction',
  'badBytes',
  'envelopeBytes',
  'hugeBytes',
  'array',
  'date',
  'map',
  'transparentProxy',
  'nullPrototypeEnvelope',
);

/** A hostility at one of the envelope's objects (`at` picks it, modulo their number), or a hostile raw input. */
export const hostileRecipe: fc.Arbitrary<HostileRecipe> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ at: fc.nat({ max: 1000 }), hostility }) },
  { weight: 1, arbitrary: fc.record({ raw: rawInput }) },
);
