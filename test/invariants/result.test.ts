import { describe, expect, test } from 'vitest';
import { verifyIntegrity } from '../../src/contract/digest.js';
import { conformanceResult, formatSuite } from '../../src/testkit/invariants/report.js';
import { validateConformanceResult } from '../../src/testkit/invariants/result-schema.js';
import { runInvariantSuite } from '../../src/testkit/invariants/suite.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';

describe('the suite result', () => {
  test("prints a row per invariant and writes a conformance result that validates against upstream's schema", async () => {
    const result = await runInvariantSuite({ runs: 3, seed: 5, stores: ['memory'], machineRuns: 20 });
    const table = formatSuite(result);
    for (const row of result.rows) expect(table).toContain(row.invariant);
    expect(table).toContain('seed 5: all invariants hold');
    const envelope = conformanceResult(result, undefined, new Date('2026-11-30T12:00:00.000Z')) as {
      statement: Record<string, unknown>;
      statementDigest: { value: string };
    };
    // The statement digest is the JCS SHA-256 of the statement alone.
    expect(verifyIntegrity({ ...envelope.statement, integrity: { value: envelope.statementDigest.value } }).valid).toBe(
      true,
    );
    expect(envelope.statement.overallStatus).toBe('passed');
    if (upstreamAvailable) expect(validateConformanceResult(envelope, upstreamDir)).toEqual([]);
  }, 60_000);

  test.skipIf(!upstreamAvailable)(
    'a failed run is reported as failed, and a tampered statement no longer matches its digest',
    async () => {
      const result = await runInvariantSuite({ runs: 2, seed: 9, stores: ['memory'], machineRuns: 10 });
      const failed = { ...result, passed: false };
      const envelope = conformanceResult(failed, undefined, new Date('2026-11-30T12:00:00.000Z')) as {
        statement: Record<string, unknown>;
        statementDigest: { value: string };
      };
      expect(envelope.statement.overallStatus).toBe('failed');
      expect(validateConformanceResult(envelope, upstreamDir)).toEqual([]);
      const tampered = { ...envelope.statement, overallStatus: 'passed' };
      expect(verifyIntegrity({ ...tampered, integrity: { value: envelope.statementDigest.value } }).valid).toBe(false);
    },
    60_000,
  );
});
