import { jcsSha256 } from '../../contract/digest.js';
import { auditResultEnvelope, evidenceDigest, testkitSourcesDigest } from '../result-statement.js';
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

/**
 * The run as a `coven.automations.conformance-result.v1` envelope (audit only, unsigned): the
 * state-machine-property-tests suite of the structural profile, with a JCS SHA-256 statement digest.
 */
export function conformanceResult(
  result: SuiteResult,
  selfCheck: SelfCheckRow[] | undefined,
  observedAt: Date,
): Record<string, unknown> {
  const passed = result.passed && (selfCheck ?? []).every((r) => r.status === 'caught');
  const evidence = {
    seed: result.seed,
    rows: result.rows,
    selfCheck: selfCheck ?? null,
    failures: result.failures.map((f) => ({ invariants: f.invariants, seed: f.seed })),
  };
  const status = passed ? 'passed' : 'failed';
  const runner = {
    name: 'coven-automata-invariants',
    artifactSha256: testkitSourcesDigest('invariants'),
    vectorSetSha256: jcsSha256({ seed: result.seed, invariants: result.rows.map((r) => r.invariant) }),
  };
  const suiteId = 'state-machine-property-tests';
  return auditResultEnvelope(
    `coven-automata-invariants-${result.seed}`,
    runner,
    [
      {
        profile: 'structural',
        status,
        requiredSuites: [suiteId],
        suiteResults: [{ suiteId, status, evidenceDigest: evidenceDigest(evidence) }],
      },
    ],
    observedAt,
  );
}
