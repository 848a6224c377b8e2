import { describe, expect, test } from 'vitest';
import { memberFor } from '../../src/domain/work-partition.js';

const keys = Array.from({ length: 2000 }, (_, i) => `automation-${i}`);

describe('memberFor (rendezvous hashing of work over live engines)', () => {
  test('every key goes to exactly one member, and the members share the keys about evenly', () => {
    const members = ['engine-a', 'engine-b', 'engine-c', 'engine-d'];
    const shares = new Map(members.map((m) => [m, 0]));
    for (const key of keys) {
      const owner = memberFor(key, members)!;
      expect(members).toContain(owner);
      shares.set(owner, shares.get(owner)! + 1);
    }
    for (const [member, share] of shares) expect(share, member).toBeGreaterThan(2000 / 4 - 150);
  });

  test('the same members in any order give the same owner: engines agree without talking', () => {
    for (const key of keys.slice(0, 200)) expect(memberFor(key, ['x', 'y', 'z'])).toBe(memberFor(key, ['z', 'x', 'y']));
  });

  test('when a member leaves, only its keys move, each to a remaining member', () => {
    const before = keys.map((k) => memberFor(k, ['a', 'b', 'c']));
    const after = keys.map((k) => memberFor(k, ['a', 'c']));
    for (let i = 0; i < keys.length; i++) {
      if (before[i] !== 'b') expect(after[i]).toBe(before[i]);
      else expect(['a', 'c']).toContain(after[i]);
    }
  });

  test('no members: no owner', () => {
    expect(memberFor('k', [])).toBeUndefined();
  });
});
