import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, test } from 'vitest';
import { runFile, type FileReport } from '../../src/testkit/conformance/corpus.js';
import { formatFileReports } from '../../src/testkit/conformance/report-format.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';

// Three situations upstream's conformance plane has files for that the shared corpus does not hold. These vectors
// are this project's own, written in the corpus format with the expectation such a file states (the reference
// model's), so the runner's verdict on each is the one the contract rules give, never `fail`.

const FIXTURES = join(import.meta.dirname, 'fixtures');
const fixture = (name: string) => join(FIXTURES, `${name}.json`);
const dir = mkdtempSync(join(tmpdir(), 'coven-own-vectors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The rules of every `differs` expectation, and whether anything failed. */
function verdict(report: FileReport) {
  const expectations = report.vectors.flatMap((v) => v.expectations);
  return {
    status: report.status,
    rules: [...new Set(expectations.filter((e) => e.status === 'differs').map((e) => e.rule))].sort(),
    failed: expectations.filter((e) => e.status === 'fail').map((e) => e.expectation),
  };
}

/** The fixture with some ops' instants moved (by op index), written to a temporary file. */
function retimed(name: string, instants: Record<number, string>): string {
  const vector = JSON.parse(readFileSync(fixture(name), 'utf8')) as { input: { operations: Array<{ at?: string }> } };
  for (const [i, at] of Object.entries(instants)) vector.input.operations[Number(i)]!.at = at;
  const file = join(dir, `${name}-${Object.keys(instants).join('-')}.json`);
  writeFileSync(file, JSON.stringify(vector));
  return file;
}

describe('three upstream situations, as vectors of our own', () => {
  test('a cancel committed at the instant the deadline passes: pass (the committed cancel owns the stop)', async () => {
    const report = await runFile(fixture('cancel-at-deadline-instant'));
    expect(verdict(report), formatFileReports([report])).toEqual({ status: 'pass', rules: [], failed: [] });
  });

  test('evidence lost after a side effect, a failed occurrence expected: differs by its rule', async () => {
    const report = await runFile(fixture('evidence-lost-expected-failed'));
    expect(verdict(report), formatFileReports([report])).toEqual({
      status: 'differs',
      rules: ['lost-evidence-awaits-operator-recovery'],
      failed: [],
    });
  });

  test("a claim whose lease lapsed hours before the restart: differs by the dispatch under the claim's fence", async () => {
    const report = await runFile(fixture('claim-lapsed-before-restart'));
    expect(verdict(report), formatFileReports([report])).toEqual({
      status: 'differs',
      rules: ['lapsed-claim-dispatched-under-fence'],
      failed: [],
    });
  });
});

describe('the rules read the timings, not the files', () => {
  test('the same claim restarted inside its lease: the lease_expired expectations fail', async () => {
    const report = await runFile(retimed('claim-lapsed-before-restart', { 2: '2026-05-04T07:30:00.000Z' }));
    expect(verdict(report)).toEqual({
      status: 'fail',
      rules: [],
      failed: ['occurrences[0]', 'runs', 'dispatchCount'],
    });
  });

  test('the same cancel a second after the deadline: the engine times the run out, the cancelled expectation fails', async () => {
    const late = '2026-05-04T06:20:01.000Z';
    const report = await runFile(retimed('cancel-at-deadline-instant', { 2: late, 3: late }));
    expect(verdict(report).failed).toEqual(['occurrences[0]', 'runs[0]']);
  });
});

describe.skipIf(!upstreamAvailable)('the fixtures are conformance.vector.v1 documents', () => {
  test("each validates against upstream's vector schema", () => {
    const schema = JSON.parse(
      readFileSync(join(upstreamDir, 'conformance/schemas/conformance.vector.v1.schema.json'), 'utf8'),
    ) as object;
    const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);
    for (const name of ['cancel-at-deadline-instant', 'evidence-lost-expected-failed', 'claim-lapsed-before-restart']) {
      const ok = validate(JSON.parse(readFileSync(fixture(name), 'utf8')));
      expect(validate.errors ?? [], name).toEqual([]);
      expect(ok).toBe(true);
    }
  });
});
