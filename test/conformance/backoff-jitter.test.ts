import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, test } from 'vitest';
import { backoffMs } from '../../src/dispatcher/settlement.js';

const exponential = (backoffSeconds: number) =>
  ({ maxAttempts: 10, backoffPolicy: 'exponential', backoffSeconds, retryableClasses: [] }) as Parameters<
    typeof backoffMs
  >[0];

describe('retry backoff jitter (BLAKE3, as upstream pins it)', () => {
  test('the hash is BLAKE3: the published digest of the empty input', () => {
    expect(bytesToHex(blake3(new Uint8Array()))).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
  });

  test('delay = first 8 bytes of BLAKE3("<runId>:<n>") as a big-endian u64, mod the ceiling, plus one second', () => {
    // BLAKE3("run-1:2") begins 5dae2600445c6e66; that mod 30 is 2, so the delay is 3 s.
    expect(bytesToHex(blake3(new TextEncoder().encode('run-1:2'))).slice(0, 16)).toBe('5dae2600445c6e66');
    expect(backoffMs(exponential(30), 'run-1', 2)).toBe(3_000);
    for (const n of [2, 3, 4, 9]) {
      const head = BigInt(`0x${bytesToHex(blake3(new TextEncoder().encode(`run-x:${n}`))).slice(0, 16)}`);
      const ceiling = Math.min(30 * 2 ** Math.min(n - 2, 16), 86_400);
      expect(backoffMs(exponential(30), 'run-x', n)).toBe((Number(head % BigInt(ceiling)) + 1) * 1000);
    }
  });

  test('every delay lies in [1 s, ceiling] and the ceiling is capped at a day', () => {
    for (let n = 2; n < 40; n++) {
      const ms = backoffMs(exponential(45), `run-${n}`, n);
      expect(ms).toBeGreaterThanOrEqual(1000);
      expect(ms).toBeLessThanOrEqual(Math.min(45 * 2 ** Math.min(n - 2, 16), 86_400) * 1000);
    }
  });

  test('none and fixed are not jittered', () => {
    expect(backoffMs({ ...exponential(30), backoffPolicy: 'none' }, 'r', 2)).toBe(0);
    expect(backoffMs({ ...exponential(30), backoffPolicy: 'fixed' }, 'r', 5)).toBe(30_000);
  });
});
