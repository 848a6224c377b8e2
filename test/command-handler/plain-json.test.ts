import { describe, expect, test } from 'vitest';
import { MAX_COMMAND_BYTES, MAX_NESTING_DEPTH, toPlainJson } from '../../src/command-handler/plain-json.js';
import { ContractError } from '../../src/contract/errors.js';

function refusal(input: unknown): { code: string; message: string } {
  try {
    toPlainJson(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ContractError);
    return { code: (error as ContractError).code, message: (error as ContractError).message };
  }
  throw new Error('expected a refusal');
}

const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

describe('toPlainJson, the boundary copy', () => {
  test(`nesting: ${MAX_NESTING_DEPTH} levels pass, one more is VALIDATION_FAILED, as a value and as text`, () => {
    expect(toPlainJson(nested(MAX_NESTING_DEPTH))).toEqual(nested(MAX_NESTING_DEPTH));
    expect(toPlainJson(JSON.stringify(nested(MAX_NESTING_DEPTH)))).toEqual(nested(MAX_NESTING_DEPTH));
    expect(refusal(nested(MAX_NESTING_DEPTH + 1)).code).toBe('VALIDATION_FAILED');
    expect(refusal(JSON.stringify(nested(MAX_NESTING_DEPTH + 1))).message).toMatch(/deeper than 128 levels/);
    // Far past the stack's reach: refused by the limit, not by a stack overflow.
    expect(refusal(`${'['.repeat(100_000)}${']'.repeat(100_000)}`).message).toMatch(/deeper than 128 levels/);
  });

  test('size: exactly the limit passes; one byte more, or a value whose output must pass it, is PAYLOAD_TOO_LARGE', () => {
    const atLimit = JSON.stringify('x'.repeat(MAX_COMMAND_BYTES - 2));
    expect(Buffer.byteLength(atLimit)).toBe(MAX_COMMAND_BYTES);
    expect(toPlainJson(atLimit)).toHaveLength(MAX_COMMAND_BYTES - 2);
    expect(refusal(JSON.stringify('x'.repeat(MAX_COMMAND_BYTES - 1)))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(refusal({ s: 'é'.repeat(MAX_COMMAND_BYTES / 2) }).code).toBe('PAYLOAD_TOO_LARGE');
    // Stops on a lower bound of the output instead of building it: 50 M values would take seconds to write.
    const huge = new Proxy([], {
      get: (target, key) =>
        key === 'length'
          ? 50_000_000
          : key === 'toJSON'
            ? undefined
            : typeof key === 'string' && /^\d+$/.test(key)
              ? 1234567
              : Reflect.get(target, key),
    });
    const started = performance.now();
    expect(refusal(huge).code).toBe('PAYLOAD_TOO_LARGE');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test('what JSON cannot carry faithfully is VALIDATION_FAILED; what it drops by definition is dropped', () => {
    for (const odd of [
      { n: 1n },
      { f: () => 1 },
      { s: Symbol('s') },
      { x: Number.NaN },
      { x: -Infinity },
      [undefined],
      '{"x":1e400}',
      '{"x":',
      new Uint8Array([0xff]),
    ]) {
      expect(refusal(odd).code).toBe('VALIDATION_FAILED');
    }
    expect(
      toPlainJson({ a: undefined, b: new Date(0), c: Object.assign(Object.create(null) as object, { d: 1 }) }),
    ).toEqual({ b: '1970-01-01T00:00:00.000Z', c: { d: 1 } });
    expect(toPlainJson(new TextEncoder().encode('{"ok":true}'))).toEqual({ ok: true });
  });

  test('a thrown value is described without being trusted', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const throwing = (thrown: unknown) => ({
      get a(): never {
        throw thrown;
      },
    });
    expect(refusal(throwing(proxy)).message).toBe('command is not JSON-serialisable: a thrown object');
    expect(
      refusal(
        throwing(
          Object.defineProperty(new Error(), 'message', {
            get: () => {
              throw new Error('no');
            },
          }),
        ),
      ).message,
    ).toBe('command is not JSON-serialisable: a thrown object');
    expect(refusal(throwing('plain words')).message).toBe('command is not JSON-serialisable: plain words');
    expect(refusal(proxy).code).toBe('VALIDATION_FAILED');
  });
});
