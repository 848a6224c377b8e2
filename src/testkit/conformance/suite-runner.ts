import { readFileSync } from 'node:fs';
import { decidingRule, emptySeen, type Situation } from './contract-rules.js';
import {
  attemptTerminalImmutability,
  capabilityNegotiation,
  commandAdoptionIdempotency,
  commandEnvelopeOutcomes,
  occurrenceFenceUniqueness,
  runTerminalMonotonicity,
  type CaseRunner,
  type SuiteCase,
} from './suite-cases.js';
import { definitionLifecycleTransitions } from './suite-lifecycle.js';
import { schedulerLeadershipFencing } from './suite-leadership.js';
import { cancellationTimeoutArbitration } from './suite-arbitration.js';
import { startupReconciliationWake } from './suite-startup.js';
import { runtimeAuthorityTerminalRecovery } from './suite-recovery.js';
import { overall, type ExpectationResult, type VectorReport } from './vector-format.js';

type SuiteEntry = { run: CaseRunner; createdThroughDraft?: boolean } | { unsupported: string };

/** Every audit-runner suite (runner/inventory.json), mapped to its interpreter or to what it needs. */
export const SUITES: Record<string, SuiteEntry> = {
  'attempt-terminal-immutability': { run: attemptTerminalImmutability },
  'run-terminal-monotonicity': { run: runTerminalMonotonicity },
  'occurrence-fence-uniqueness': { run: occurrenceFenceUniqueness },
  'capability-negotiation': { run: capabilityNegotiation },
  'command-adoption-idempotency': { run: commandAdoptionIdempotency },
  'command-envelope-outcomes': { run: commandEnvelopeOutcomes },
  'definition-lifecycle-transitions': { run: definitionLifecycleTransitions, createdThroughDraft: true },
  'cancellation-timeout-arbitration': { run: cancellationTimeoutArbitration },
  'runtime-authority-terminal-recovery': { run: runtimeAuthorityTerminalRecovery },
  'scheduler-leadership-fencing': { run: schedulerLeadershipFencing },
  'startup-reconciliation-wake': { run: startupReconciliationWake, createdThroughDraft: true },
};

/** `coven.automations.<suite>-vectors.v1` → `<suite>`. */
export function suiteIdOf(schemaVersion: string): string | undefined {
  return /^coven\.automations\.(.+)-vectors\.v1$/.exec(schemaVersion)?.[1];
}

async function runCase(suiteId: string, entry: SuiteEntry, c: SuiteCase): Promise<ExpectationResult[]> {
  if ('unsupported' in entry) return [{ expectation: 'case', status: 'unsupported', reason: entry.unsupported }];
  const results: ExpectationResult[] = [];
  await entry.run(c, (expectation, ok, expected, observed, seen) => {
    if (ok) return void results.push({ expectation, status: 'pass' });
    const situation: Situation = {
      vector: { vectorId: `${suiteId}.${c.caseId}`, profile: '', title: c.caseId, input: {}, expected: {} },
      expectation,
      kind: expectation.split(/[[.]/)[0]!,
      expected,
      observed,
      seen: { ...emptySeen(), ...seen },
      ...(entry.createdThroughDraft === true ? { createdThroughDraft: true } : {}),
    };
    const rule = decidingRule(situation);
    if (rule === undefined) results.push({ expectation, status: 'fail', expected, observed });
    else
      results.push({
        expectation,
        status: 'differs',
        expected,
        observed,
        rule: rule.id,
        reason: `${rule.id}: "${rule.sentence}": ${rule.because}`,
      });
  });
  return results;
}

/** Runs an audit-runner suite file: one report per case. */
export async function runSuite(file: string): Promise<VectorReport[]> {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { schemaVersion: string; cases: SuiteCase[] };
  const suiteId = suiteIdOf(doc.schemaVersion) ?? doc.schemaVersion;
  const entry: SuiteEntry = SUITES[suiteId] ?? { unsupported: `no interpreter for suite ${suiteId}` };
  const reports: VectorReport[] = [];
  for (const c of doc.cases) {
    const expectations = await runCase(suiteId, entry, c);
    reports.push({
      file,
      vectorId: `${suiteId}.${c.caseId}`,
      title: c.caseId,
      status: overall(expectations),
      expectations,
    });
  }
  return reports;
}
