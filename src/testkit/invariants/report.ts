import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { integrityOf, jcsSha256, sha256Hex } from '../../contract/digest.js';
import { packageRoot } from '../../contract/package-root.js';
import { SPEC_DIR } from '../../spec/lifecycle-spec.js';
import type { SelfCheckRow } from './self-check.js';
import { violatedBySpec } from './spec-on-disk.js';
import type { SuiteResult } from './suite.js';

/** The terminal table: one row per invariant, then failures with their seed and shrunk counterexample. */
export function formatSuite(result: SuiteResult, selfCheck?: SelfCheckRow[]): string {
  const header = ['invariant', 'source', 'levels', 'runs', 'steps checked', 'status'];
  const rows = result.rows.map((r) => [
    r.invariant,
    r.source,
    r.levels.join('+'),
    String(r.runs),
    String(r.stepsChecked),
    r.status.toUpperCase(),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const out = rows.length === 0 ? [] : [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
  for (const c of result.specChecks.filter((s) => s.problems.length > 0))
    out.push('', `FAILED before any property ran: ${c.check}`, ...c.problems.map((p) => `  ${p}`));
  const violated = violatedBySpec(result.specChecks);
  for (const f of result.failures) {
    out.push(
      '',
      `FAILED on the ${f.store} store: ${f.invariants.join(', ')}`,
      ...f.problems.map((p) => `  ${p}`),
      '  minimal counterexample:',
      ...f.counterexample.split('\n').map((c) => `    ${c}`),
      `  replay: --seed ${f.seed}${f.path === undefined ? '' : ` (fast-check path ${f.path})`}`,
    );
  }
  for (const m of result.machine.filter((r) => r.problems.length > 0))
    out.push('', `FAILED machine property ${m.machine}: ${m.property}`, ...m.problems.map((p) => `  ${p}`));
  if (selfCheck !== undefined) {
    out.push('', 'self-check (broken variants must be caught by name):');
    for (const r of selfCheck)
      out.push(
        `  ${r.status === 'caught' ? 'caught' : 'MISSED'}  ${r.expected.padEnd(31)} ` +
          `${r.property === undefined ? '' : `[${r.property}] `}` +
          `${r.variant}${r.status === 'caught' ? '' : ` (caught by: ${r.caughtBy.join(', ') || 'nothing'})`}`,
      );
  }
  const verdict = result.passed
    ? 'all invariants hold'
    : result.specChecks.some((c) => c.problems.length > 0)
      ? `NOTHING PROVEN: the spec on disk failed its checks${
          violated.length > 0 ? `; it violates ${violated.join(', ')}` : ''
        }`
      : 'INVARIANTS VIOLATED';
  out.push('', `seed ${result.seed}: ${verdict}`);
  return out.join('\n');
}

function gitCommit(root: string): string {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return /^[0-9a-f]{40}$/.test(commit) ? commit : '0'.repeat(40);
  } catch {
    return '0'.repeat(40);
  }
}

function digestOfFiles(dir: string, files: string[]): string {
  return sha256Hex(files.map((f) => `${f}\u0000${sha256Hex(readFileSync(join(dir, f), 'utf8'))}`).join('\n'));
}

/** The spec bundle the run checked, identified by the digests of its files. */
function protocolArtifact(root: string, commit: string): Record<string, unknown> {
  const specFiles = readdirSync(join(root, SPEC_DIR))
    .filter((f) => f.endsWith('.json'))
    .sort();
  return {
    bundleSchemaVersion: 'coven-automata.spec.v1',
    sourceCommit: commit,
    bundleSha256: digestOfFiles(join(root, SPEC_DIR), specFiles),
    contractContentSha256: sha256Hex(readFileSync(join(root, SPEC_DIR, 'state-machines.json'), 'utf8')),
    fileCount: specFiles.length,
  };
}

/** The suite that ran: this package's version, its invariant sources' digest, and what it was asked to check. */
function runner(root: string, result: SuiteResult): Record<string, unknown> {
  const invariantSources = readdirSync(join(root, 'src', 'testkit', 'invariants')).sort();
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return {
    name: 'coven-automata-invariants',
    version,
    artifactSha256: digestOfFiles(join(root, 'src', 'testkit', 'invariants'), invariantSources),
    vectorSetSha256: jcsSha256({ seed: result.seed, invariants: result.rows.map((r) => r.invariant) }),
  };
}

/**
 * The run as a `coven.automations.conformance-result.v1` envelope (audit only, unsigned): the
 * state-machine-property-tests suite of the structural profile, with a JCS SHA-256 statement digest.
 */
export function conformanceResult(
  result: SuiteResult,
  selfCheck: SelfCheckRow[] | undefined,
  observedAt: Date,
): Record<string, unknown> {
  const root = packageRoot();
  const commit = gitCommit(root);
  const passed = result.passed && (selfCheck ?? []).every((r) => r.status === 'caught');
  const evidence = {
    seed: result.seed,
    rows: result.rows,
    selfCheck: selfCheck ?? null,
    failures: result.failures.map((f) => ({ invariants: f.invariants, seed: f.seed })),
  };
  const statement = {
    contractProfile: 'coven.automations.v1',
    resultId: `coven-automata-invariants-${result.seed}`,
    decisionScope: { kind: 'audit_only' },
    source: { repository: 'https://coven-automata.invalid/coven-automata', commit },
    protocolArtifact: protocolArtifact(root, commit),
    runner: runner(root, result),
    environment: { os: platform(), arch: arch(), runtime: `node-${process.versions.node}` },
    observedAt: observedAt.toISOString(),
    profileResults: [
      {
        profile: 'structural',
        status: passed ? 'passed' : 'failed',
        requiredSuites: ['state-machine-property-tests'],
        suiteResults: [
          {
            suiteId: 'state-machine-property-tests',
            status: passed ? 'passed' : 'failed',
            evidenceDigest: { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value: jcsSha256(evidence) },
          },
        ],
      },
    ],
    overallStatus: passed ? 'passed' : 'failed',
  };
  const { value } = integrityOf(statement as Record<string, unknown>);
  return {
    schemaVersion: 'coven.automations.conformance-result.v1',
    statement,
    statementDigest: { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value },
  };
}
