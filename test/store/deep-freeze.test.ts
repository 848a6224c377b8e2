import { describe, expect, test } from 'vitest';
import { freezeIfPlain } from '../../src/store/deep-freeze.js';

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('freezeIfPlain', () => {
  test('plain JSON data is frozen in place, all the way down, and equals its JSON round trip', () => {
    const shared = Object.freeze({ kept: true });
    const value = { a: 1, b: 'x', c: null, d: [true, { e: 2.5 }], f: Object.create(null) as object, shared };
    expect(freezeIfPlain(value)).toBe(true);
    expect(Object.isFrozen(value) && Object.isFrozen(value.d) && Object.isFrozen(value.d[1])).toBe(true);
    expect(roundTrip(value)).toStrictEqual(JSON.parse(JSON.stringify(value)));
    expect({ ...value, f: {} }).toStrictEqual(roundTrip(value));
    // Met again (a record's unchanged part under a new top), it is walked again and still plain.
    expect(freezeIfPlain({ again: value })).toBe(true);
  });

  test.each([
    ['undefined member', { a: undefined }],
    ['function', { a: () => 1 }],
    ['symbol', { a: Symbol('s') }],
    ['bigint', { a: 1n }],
    ['NaN', { a: Number.NaN }],
    ['Infinity', [Infinity]],
    ['-0', { a: -0 }],
    ['Date', { a: new Date(0) }],
    ['class instance', { a: new Map() }],
    ['frozen Date', { a: Object.freeze(new Date(0)) }],
    // Frozen by its maker is no proof of plain data: the walk looks inside.
    ['frozen object holding a function', { a: Object.freeze({ b: Object.freeze({ c: () => 1 }) }) }],
    ['frozen array holding undefined', { a: Object.freeze([1, undefined]) }],
    ['hole', [1, undefined, 3].filter((_, i) => i !== 1).concat(new Array<number>(1))],
    ['object with toJSON', { a: { toJSON: () => 'x' } }],
  ])('%s: not plain, the top is left unfrozen', (_, value) => {
    expect(freezeIfPlain(value)).toBe(false);
    expect(Object.isFrozen(value)).toBe(false);
  });

  test('a cycle or a value nested deeper than the walk goes is not plain (the JSON copy decides)', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(freezeIfPlain(cycle)).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(freezeIfPlain(deep)).toBe(false);
    expect(() => JSON.stringify(cycle)).toThrow(TypeError);
  });
});
