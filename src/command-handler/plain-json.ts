import { ContractError } from '../contract/errors.js';

/** Largest accepted command, in UTF-8 bytes: a definition's prompt may be 100k characters. */
export const MAX_COMMAND_BYTES = 1_048_576;

/**
 * Deepest accepted nesting of objects and arrays: serde_json's default recursion limit, so the contract's
 * Rust peer reads whatever this engine accepts, and every recursive step after the boundary (schema
 * validation, RFC 8785 canonicalisation, structured copies) stays far from the stack's end.
 */
export const MAX_NESTING_DEPTH = 128;

/**
 * What a thrown value says about itself, without trusting it: a getter may throw a revoked Proxy, an object
 * whose `message` getter throws, a symbol or nothing at all.
 */
export function describeThrown(thrown: unknown): string {
  try {
    if (typeof thrown === 'string') return thrown.slice(0, 200);
    if (thrown instanceof Error) return String(thrown.message).slice(0, 200);
  } catch {
    // The thrown value defends itself against inspection (a revoked Proxy): say so below.
  }
  return `a thrown ${thrown === null ? 'null' : typeof thrown}`;
}

/**
 * Untrusted input as plain JSON data, converted once at the boundary so nothing after it ever runs a getter,
 * a Proxy trap or a `toJSON` again: a string or UTF-8 bytes are parsed, any other value is serialised and
 * parsed back. Refuses, with a typed ContractError and nothing else, input larger than
 * {@link MAX_COMMAND_BYTES}, nested deeper than {@link MAX_NESTING_DEPTH}, that is not JSON, or that JSON
 * cannot carry faithfully (BigInt, symbols, functions, non-finite numbers, cycles, throwing accessors).
 *
 * @example
 * ```ts
 * toPlainJson('{"a":[1,2]}'); // { a: [1, 2] }
 * toPlainJson({ n: 10n });    // throws ContractError VALIDATION_FAILED
 * ```
 */
export function toPlainJson(raw: unknown, what = 'command'): unknown {
  let text: string | undefined;
  if (typeof raw === 'string') text = raw;
  else if (isBytes(raw)) text = decodeBytes(raw, what);
  else text = serialise(raw, what);
  if (text === undefined) throw new ContractError('VALIDATION_FAILED', `${what} is not JSON (${typeof raw})`);
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_COMMAND_BYTES) throw tooLarge(what, size);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ContractError('VALIDATION_FAILED', `${what} is not valid JSON: ${describeThrown(error)}`);
  }
  checkParsed(value, what);
  return value;
}

function tooLarge(what: string, size?: number): ContractError {
  const measured = size === undefined ? 'larger than the limit' : `${size} bytes; the limit is`;
  return new ContractError('PAYLOAD_TOO_LARGE', `${what} is ${measured} ${MAX_COMMAND_BYTES} bytes`, {
    ...(size === undefined ? {} : { size }),
    limit: MAX_COMMAND_BYTES,
  });
}

function tooDeep(what: string): ContractError {
  return new ContractError(
    'VALIDATION_FAILED',
    `${what} nests objects and arrays deeper than ${MAX_NESTING_DEPTH} levels`,
    { limit: MAX_NESTING_DEPTH },
  );
}

function isBytes(raw: unknown): raw is Uint8Array {
  try {
    return raw instanceof Uint8Array && ArrayBuffer.isView(raw);
  } catch {
    // A revoked Proxy refuses even `instanceof`: it is no byte buffer, and serialise() refuses it.
    return false;
  }
}

function decodeBytes(raw: Uint8Array, what: string): string {
  let size: number;
  let text: string;
  try {
    size = raw.byteLength;
    if (size > MAX_COMMAND_BYTES) throw tooLarge(what, size);
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch (error) {
    if (error instanceof ContractError) throw error;
    throw new ContractError('VALIDATION_FAILED', `${what} is not UTF-8 text: ${describeThrown(error)}`);
  }
  return text;
}

/**
 * JSON.stringify under guard. Its replacer sees every value once, after `toJSON`, with its holder as
 * `this`: enough to refuse what JSON would silently change (a BigInt throws anyway; a function or symbol
 * would vanish, NaN become null), to track depth before the recursion gets deep, and to stop as soon as a
 * lower bound of the output's size passes the limit instead of building a gigabyte string first.
 */
function serialise(raw: unknown, what: string): string | undefined {
  const depth = new WeakMap<object, number>();
  let atLeast = 0;
  let refusal: ContractError | undefined;
  const refuse = (error: ContractError): never => {
    refusal = error;
    throw error;
  };
  function replacer(this: unknown, key: string, value: unknown): unknown {
    const holderDepth = typeof this === 'object' && this !== null ? (depth.get(this) ?? 0) : 0;
    const inArray = Array.isArray(this);
    if (value !== undefined) atLeast += writtenAtLeast(value) + (inArray ? 1 : key.length + 3);
    if (atLeast > MAX_COMMAND_BYTES) refuse(tooLarge(what));
    if (typeof value === 'function' || typeof value === 'symbol') {
      refuse(
        new ContractError(
          'VALIDATION_FAILED',
          `${what} holds a ${typeof value} at ${JSON.stringify(key)}: not JSON data`,
        ),
      );
    }
    if (typeof value === 'number' && !Number.isFinite(value))
      refuse(
        new ContractError(
          'VALIDATION_FAILED',
          `${what} holds ${String(value)} at ${JSON.stringify(key)}: not JSON data`,
        ),
      );
    if (value === undefined && inArray)
      refuse(new ContractError('VALIDATION_FAILED', `${what} holds undefined at index ${key}: not JSON data`));
    if (typeof value === 'object' && value !== null) {
      if (holderDepth + 1 > MAX_NESTING_DEPTH) refuse(tooDeep(what));
      depth.set(value, holderDepth + 1);
    }
    return value;
  }
  try {
    return JSON.stringify(raw, replacer);
  } catch (error) {
    if (refusal !== undefined) throw refusal;
    throw new ContractError('VALIDATION_FAILED', `${what} is not JSON-serialisable: ${describeThrown(error)}`);
  }
}

/**
 * A lower bound of the bytes JSON.stringify writes for a value, its container's separators aside: exact for
 * numbers and literals, the characters between the quotes for strings (UTF-8 takes at least one byte each).
 */
function writtenAtLeast(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'number') return String(value).length;
  if (typeof value === 'boolean') return value ? 4 : 5;
  return value === null ? 4 : 2;
}

/**
 * Refuses parsed JSON nested deeper than {@link MAX_NESTING_DEPTH} or holding a number too large for a double
 * (`1e400` parses to Infinity); iterative, so any depth is safe to inspect.
 */
function checkParsed(value: unknown, what: string): void {
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [item, level] = pending.pop()!;
    if (typeof item === 'number' && !Number.isFinite(item))
      throw new ContractError('VALIDATION_FAILED', `${what} holds a number too large for a double`);
    if (typeof item !== 'object' || item === null) continue;
    if (level > MAX_NESTING_DEPTH) throw tooDeep(what);
    for (const child of Array.isArray(item) ? item : Object.values(item)) pending.push([child, level + 1]);
  }
}
