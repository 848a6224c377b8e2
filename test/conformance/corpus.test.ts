import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { CONTRACT_RULES } from '../../src/testkit/conformance/contract-rules.js';
import {
  differences,
  findCorpus,
  runFile,
  summaryLine,
  type FileReport,
} from '../../src/testkit/conformance/corpus.js';
import { formatFileReports } from '../../src/testkit/conformance/report-format.js';
import { corpusConformanceResult, RESULT_PROFILES } from '../../src/testkit/conformance/result-envelope.js';
import { OPS } from '../../src/testkit/conformance/vector-ops.js';
import { integrityOf } from '../../src/contract/digest.js';
import { validateConformanceResult } from '../../src/testkit/invariants/result-schema.js';
import { SUITES } from '../../src/testkit/conformance/suite-runner.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';

const files = upstreamAvailable ? findCorpus(upstreamDir) : [];
const SEED = join(packageRoot(), '..', 'shared', 'seeds', '000_cba64313b6c04f70.txt');

describe.skipIf(!upstreamAvailable)('the whole upstream conformance corpus through the runner', () => {
  let reports: FileReport[] = [];

  test('every vector, scenario and runner suite runs: 0 fail, 0 crash', { timeout: 300_000 }, async () => {
    expect(files.length).toBeGreaterThanOrEqual(90);
    reports = [];
    for (const file of files) reports.push(await runFile(file));
    console.info(formatFileReports(reports));
    const diffs = differences(reports);
    console.info(`\n${summaryLine(reports)}\n${diffs.length} differs:`);
    for (const d of diffs) console.info(`  ${d.vectorId} ${d.expectation}: ${d.rule}`);
    const bad = reports.filter((r) => r.status === 'fail' || r.status === 'crash');
    expect(
      bad.map((r) => `${r.status} ${r.file}: ${r.crash ?? ''}`),
      formatFileReports(bad),
    ).toEqual([]);
    // The figures the README reports: a file moving between pass, differs and unsupported is a change to review.
    expect(summaryLine(reports)).toBe('93 files: 79 pass, 14 differ, 0 unsupported, 0 fail, 0 crash');
  });

  test('every differs names a contract rule, and every unsupported says what is missing', () => {
    expect(reports.length).toBe(files.length);
    const ids = new Set(CONTRACT_RULES.map((r) => r.id));
    for (const e of reports.flatMap((r) => r.vectors.flatMap((v) => v.expectations))) {
      if (e.status === 'differs') expect(ids.has(e.rule ?? ''), JSON.stringify(e)).toBe(true);
      if (e.status === 'differs' || e.status === 'unsupported') expect(e.reason).toBeTruthy();
    }
  });

  test('the run as a conformance-result envelope: upstream schema, every profile, one suite per file', () => {
    expect(reports.length).toBe(files.length);
    const envelope = corpusConformanceResult(reports, upstreamDir, new Date('2026-12-03T00:00:00Z')) as {
      statement: {
        profileResults: Array<{ profile: string; status: string; suiteResults: Array<{ status: string }> }>;
        overallStatus: string;
      };
      statementDigest: { value: string };
    };
    expect(validateConformanceResult(envelope, upstreamDir)).toEqual([]);
    expect(envelope.statementDigest.value).toBe(integrityOf(envelope.statement as never).value);
    const { profileResults } = envelope.statement;
    expect(profileResults.map((p) => p.profile).sort()).toEqual([...RESULT_PROFILES].sort());
    const suites = profileResults.flatMap((p) => p.suiteResults);
    const inventory = JSON.parse(readFileSync(join(upstreamDir, 'conformance/runner/inventory.json'), 'utf8')) as {
      suites: Array<{ vectorFile: string }>;
    };
    const absent = inventory.suites.filter((s) => !files.some((f) => f.endsWith(`/${s.vectorFile}`)));
    expect(suites.length).toBe(files.length + absent.length);
    // A file that is not contract-conformant (fail, crash) fails its suite, its profile and the whole statement.
    const broken: FileReport = { ...reports[0]!, status: 'crash', vectors: [], crash: 'planted' };
    const failed = corpusConformanceResult([broken, ...reports.slice(1)], upstreamDir, new Date()) as typeof envelope;
    expect(failed.statement.overallStatus).toBe('failed');
  });

  test('every op of conformance.vector.v1 has an entry in the op table', () => {
    const schema = JSON.parse(
      readFileSync(join(upstreamDir, 'conformance/schemas/conformance.vector.v1.schema.json'), 'utf8'),
    ) as { $defs: { operation: { properties: { op: { enum: string[] } } } } };
    const ops = schema.$defs.operation.properties.op.enum;
    expect(ops.filter((op) => OPS[op] === undefined)).toEqual([]);
  });

  test('every suite of runner/inventory.json has an entry in the suite table', () => {
    const inventory = JSON.parse(readFileSync(join(upstreamDir, 'conformance/runner/inventory.json'), 'utf8')) as {
      suites: Array<{ suiteId: string; vectorFile: string }>;
    };
    const present = inventory.suites.filter((s) => existsSync(join(upstreamDir, 'conformance/runner', s.vectorFile)));
    expect(present.filter((s) => SUITES[s.suiteId] === undefined).map((s) => s.suiteId)).toEqual([]);
  });
});

describe.skipIf(!existsSync(SEED))('the contract rules', () => {
  test("each rule's sentence is quoted verbatim from the contract's lifecycle page", () => {
    const seed = readFileSync(SEED, 'utf8');
    for (const rule of CONTRACT_RULES) expect(seed.includes(rule.sentence), rule.id).toBe(true);
  });

  test('rule ids are unique', () => {
    expect(new Set(CONTRACT_RULES.map((r) => r.id)).size).toBe(CONTRACT_RULES.length);
  });
});
