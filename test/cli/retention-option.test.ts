import { expect, test } from 'vitest';
import { CliError, parseRetention } from '../../src/cli/context.js';

test('--retention is checked once at the boundary: off, days per class, never; anything else is a usage error', () => {
  expect(parseRetention(undefined)).toBeUndefined();
  expect(parseRetention('off')).toBe(false);
  expect(parseRetention('standard=7,ephemeral=0.5,extended=never')).toEqual({
    windowDays: { standard: 7, ephemeral: 0.5, extended: null },
  });
  for (const bad of ['standard', 'standard=', 'forever=3', 'standard=-1', 'standard=soon', 'standard=0', 'on']) {
    expect(() => parseRetention(bad), bad).toThrow(CliError);
  }
});
