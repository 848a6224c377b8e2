import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { command, expectValidResponse } from '../support/commands.js';
import { readUpstreamJson, upstreamAvailable, upstreamDir } from '../support/upstream.js';

interface DefinitionVector {
  vectorId: string;
  input: { definitions?: unknown[]; invalidDefinitions?: unknown[] };
  expected: { refusals?: Array<{ refusalId: string; reasonMatches: string }> };
}

/** The contract code each refusal must carry; upstream's reason wording belongs to its reference model. */
const EXPECTED_CODE: Record<string, string> = {
  'definitions.reject-bad-id': 'VALIDATION_FAILED',
  'definitions.reject-empty-rrule': 'VALIDATION_FAILED',
  'definitions.reject-missing-prompt': 'VALIDATION_FAILED',
  'definitions.reject-rrule-frequency': 'CAPABILITY_UNSUPPORTED',
  'definitions.reject-schema-version': 'SCHEMA_VERSION_UNSUPPORTED',
  'definitions.reject-unknown-field': 'VALIDATION_FAILED',
};

const files = upstreamAvailable
  ? readdirSync(join(upstreamDir, 'conformance/vectors/definitions'))
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];

describe.skipIf(!upstreamAvailable)('upstream conformance vectors/definitions through legacy.import.v1', () => {
  test.each(files)('%s', async (file) => {
    const vector = readUpstreamJson<DefinitionVector>(`conformance/vectors/definitions/${file}`);
    const handler = new CommandHandler({
      store: new MemoryStore(),
      clock: new SimulatedClock('2026-03-01T00:00:00.000Z'),
    });
    const definitions = [...(vector.input.definitions ?? []), ...(vector.input.invalidDefinitions ?? [])];
    const response = expectValidResponse(
      await handler.handle(command('legacy.import.v1', { source: 'flat-definitions', definitions })),
    );
    type Failure = { automationId: string; code: string; message: string; problems?: string[] };
    // An import in which nothing could be imported is refused whole; its failures travel in the error's details.
    const result =
      response.outcome === 'rejected'
        ? { imported: [] as string[], failures: (response.error!.details as { failures: Failure[] }).failures }
        : (response.result as { imported: string[]; failures: Failure[] });
    expect(response.outcome).toBe(result.failures.length === definitions.length ? 'rejected' : 'committed');
    for (const valid of vector.input.definitions ?? []) {
      const id = (valid as { id: string }).id;
      const failure = result.failures.find((f) => f.automationId === id);
      expect(result.imported, `${vector.vectorId}: ${JSON.stringify(failure)}`).toContain(id);
    }
    for (const [i, refusal] of (vector.expected.refusals ?? []).entries()) {
      const id = (vector.input.invalidDefinitions?.[i] as { id: string }).id;
      const failure = result.failures.find((f) => f.automationId === id);
      expect(failure?.code, `${vector.vectorId} ${refusal.refusalId}`).toBe(EXPECTED_CODE[vector.vectorId]);
      const wording = [failure!.message, ...(failure!.problems ?? [])].join(' | ');
      if (!wording.includes(refusal.reasonMatches)) {
        console.info(
          `${vector.vectorId}: refused with ${failure!.code} "${wording}"; upstream's reference wording "${refusal.reasonMatches}" differs (wording is not contract)`,
        );
      }
    }
  });
});
