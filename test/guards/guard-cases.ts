import { describe, expect, test } from 'vitest';

/** One guard's cases: arguments that satisfy it and, by name, arguments that each break one condition. */
export interface GuardCase<TArgs> {
  pass: TArgs;
  fail: Record<string, TArgs>;
}

/** Runs both outcomes of every guard in a catalogue and insists that every guard has cases. */
export function describeGuards<TArgs>(
  name: string,
  guards: Record<string, (args: TArgs) => boolean>,
  cases: Record<string, GuardCase<TArgs>>,
): void {
  describe(name, () => {
    test('every guard has cases', () => {
      expect(Object.keys(guards).filter((g) => cases[g] === undefined)).toEqual([]);
    });
    for (const [id, c] of Object.entries(cases)) {
      const guard = guards[id];
      test(`${id} holds`, () => {
        expect(guard, `no guard ${id}`).toBeTypeOf('function');
        expect(guard!(c.pass)).toBe(true);
      });
      for (const [why, args] of Object.entries(c.fail)) {
        test(`${id} refuses when ${why}`, () => {
          expect(guard!(args)).toBe(false);
        });
      }
    }
  });
}
