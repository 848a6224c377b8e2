// Builds what the bad-input property sends from a drawn recipe (hostile-recipes.ts), and says what it must be refused as.
import { MAX_COMMAND_BYTES, MAX_NESTING_DEPTH } from '../../src/command-handler/plain-json.js';
import type { HostileRecipe, Hostility, OddValue, RawInput, Thrown } from './hostile-recipes.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

function throwValue(kind: Thrown): never {
  const values: Record<Thrown, () => unknown> = {
    error: () => new Error('hostile getter'),
    string: () => 'hostile string',
    revoked: revokedProxy,
    throwingMessage: () =>
      Object.defineProperty(new Error('x'), 'message', {
        get: () => {
          throw new Error('message getter');
        },
      }),
    null: () => null,
    undefined: () => undefined,
    symbol: () => Symbol('thrown'),
    codeLookalike: () => ({ code: 'NOT_FOUND', httpStatus: 404, message: 'lookalike' }),
  };
  throw values[kind]();
}

function oddValue(kind: OddValue): unknown {
  const values: Record<OddValue, () => unknown> = {
    bigint: () => 10n,
    symbol: () => Symbol('odd'),
    function: () => () => 1,
    nan: () => Number.NaN,
    infinity: () => Number.POSITIVE_INFINITY,
    undefinedInArray: () => [1, undefined],
    // eslint-disable-next-line no-sparse-arrays
    sparseArray: () => [, 1],
    date: () => new Date(0),
    map: () => new Map([['a', 1]]),
    nullPrototype: () => Object.assign(Object.create(null) as object, { a: 1 }),
  };
  return values[kind]();
}

/** Every object and array of a JSON value, by path, in a fixed depth-first order (the root first). */
function objectPaths(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [path, ...entries.flatMap(([k, v]) => objectPaths(v, [...path, k]))];
}

/**
 * Where a hostility lands in `target`: a named key (or the nth existing one) of an object; for an array an
 * index (an existing one, or the next), since JSON never reads an array's named properties.
 */
function keyOf(target: Record<string | number, unknown>, key: string | number): string | number {
  if (Array.isArray(target)) return typeof key === 'number' && target.length > 0 ? key % target.length : target.length;
  if (typeof key === 'string') return key;
  const keys = Object.keys(target);
  return keys.length === 0 ? 'x' : keys[key % keys.length]!;
}

const DEEP = '__deep_placeholder__';

function nest(levels: number, shape: 'object' | 'array'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = shape === 'object' ? { a: value } : [value];
  return value;
}

/** The hostile version of `target` (a fresh copy of part of the envelope), or of `root` for cycles. */
function hostile(target: Record<string | number, unknown>, h: Hostility, root: () => unknown): unknown {
  switch (h.kind) {
    case 'trap':
      return new Proxy(target, {
        [h.trap]: (...args: unknown[]) => {
          if (h.trap !== 'get' || h.key === null || args[1] === h.key) throwValue(h.thrown);
          return (Reflect[h.trap] as (...a: unknown[]) => unknown)(...args);
        },
      });
    case 'revoked':
      return revokedProxy();
    case 'getter':
      return Object.defineProperty(target, keyOf(target, h.key), {
        enumerable: true,
        configurable: true,
        get: () => throwValue(h.thrown),
      });
    case 'flaky': {
      let reads = 0;
      return Object.defineProperty(target, keyOf(target, h.key), {
        enumerable: true,
        configurable: true,
        get: () => (++reads % 2 === 0 ? { changed: reads } : `read ${reads}`),
      });
    }
    case 'toJSON':
      return Object.defineProperty(target, 'toJSON', {
        enumerable: false,
        value: () =>
          h.returns === 'throws'
            ? throwValue(h.thrown)
            : h.returns === 'bigint'
              ? 10n
              : h.returns === 'revoked'
                ? revokedProxy()
                : undefined,
      });
    case 'value':
      target[keyOf(target, h.key)] = oddValue(h.value);
      return target;
    case 'cycle':
      target[keyOf(target, 'self')] = h.toRoot ? root() : target;
      return target;
    case 'deep':
      target[keyOf(target, 'deep')] = h.asText ? DEEP : nest(h.depth, h.shape);
      return target;
    case 'huge':
      target[keyOf(target, 'huge')] = 'h'.repeat(h.chars);
      return target;
    case 'wide':
      target[keyOf(target, 'wide')] = Array.from({ length: h.items }, (_, i) => i);
      return target;
  }
}

function rawValue(kind: RawInput, envelope: Record<string, unknown>): unknown {
  const text = JSON.stringify(envelope);
  const values: Record<RawInput, () => unknown> = {
    null: () => null,
    undefined: () => undefined,
    number: () => 42,
    boolean: () => true,
    bigint: () => 42n,
    symbol: () => Symbol('raw'),
    function: () => () => envelope,
    revoked: revokedProxy,
    proxyOfFunction: () => new Proxy(function raw() {}, {}),
    badBytes: () => new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    envelopeBytes: () => new TextEncoder().encode(text),
    hugeBytes: () => new Uint8Array(MAX_COMMAND_BYTES + 1).fill(0x20),
    array: () => [envelope],
    date: () => new Date(0),
    map: () => new Map(Object.entries(envelope)),
    transparentProxy: () => new Proxy(envelope, {}),
    nullPrototypeEnvelope: () => Object.assign(Object.create(null) as object, envelope),
  };
  return values[kind]();
}

/** The live hostile input a recipe describes, built from a fresh copy of `envelope`. */
export function buildHostile(envelope: Record<string, unknown>, recipe: HostileRecipe): unknown {
  const copy = structuredClone(envelope);
  if ('raw' in recipe) return rawValue(recipe.raw, copy);
  const { hostility: h } = recipe;
  const paths = objectPaths(copy);
  const path = paths[recipe.at % paths.length]!;
  let built: unknown;
  if (path.length === 0) built = hostile(copy, h, () => copy);
  else {
    const parent = path
      .slice(0, -1)
      .reduce<Record<string | number, unknown>>((o, k) => o[k] as Record<string | number, unknown>, copy);
    const last = path.at(-1)!;
    parent[last] = hostile(parent[last] as Record<string | number, unknown>, h, () => copy);
    built = copy;
  }
  if ((h.kind === 'deep' || h.kind === 'huge') && h.asText) {
    const text = JSON.stringify(built);
    return h.kind === 'deep' ? text.replace(JSON.stringify(DEEP), '['.repeat(h.depth) + ']'.repeat(h.depth)) : text;
  }
  return built;
}

/**
 * The refusal a recipe cannot escape, whatever envelope it damages: input JSON cannot carry, a getter that
 * throws, a revoked Proxy, nesting past the limit, megabytes past the size limit. Undefined when the outcome
 * depends on where the damage lands (a Proxy trap JSON never calls, a Map in an extension bag).
 */
export function certainRefusal(recipe: HostileRecipe): 'VALIDATION_FAILED' | 'PAYLOAD_TOO_LARGE' | undefined {
  if ('raw' in recipe) {
    if (recipe.raw === 'hugeBytes') return 'PAYLOAD_TOO_LARGE';
    return ['envelopeBytes', 'transparentProxy', 'nullPrototypeEnvelope'].includes(recipe.raw)
      ? undefined
      : 'VALIDATION_FAILED';
  }
  const h = recipe.hostility;
  switch (h.kind) {
    case 'revoked':
    case 'getter':
    case 'cycle':
      return 'VALIDATION_FAILED';
    case 'toJSON':
      return h.returns === 'undefined' ? undefined : 'VALIDATION_FAILED';
    case 'value':
      // A function stored as `toJSON` is called, not serialised: what it returns decides.
      if (h.value === 'function' && h.key === 'toJSON') return undefined;
      return ['date', 'map', 'nullPrototype'].includes(h.value) ? undefined : 'VALIDATION_FAILED';
    case 'deep':
      return h.depth > MAX_NESTING_DEPTH ? 'VALIDATION_FAILED' : undefined;
    case 'huge':
      return h.chars > MAX_COMMAND_BYTES ? 'PAYLOAD_TOO_LARGE' : undefined;
    case 'wide':
      return h.items >= 200_000 ? 'PAYLOAD_TOO_LARGE' : undefined;
    default:
      return undefined;
  }
}
