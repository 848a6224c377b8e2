import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { CONTRACT_RULES } from '../../src/testkit/conformance/contract-rules.js';
import { runVectorDocument } from '../../src/testkit/conformance/vector-runner.js';
import type { VectorSeams } from '../../src/testkit/conformance/vector-session.js';
import type { VectorReport } from '../../src/testkit/conformance/vector-format.js';
import { faultyParts } from '../../src/testkit/invariants/faulty-engine.js';
import { FaultyRuntime } from '../../src/testkit/invariants/faulty-runtime.js';
import { FaultyStore, RUN_ACCEPTED_TWICE } from '../../src/testkit/invariants/faulty-store.js';
import { propertyParameters } from '../support/property.js';
import { scenarioArbitrary, timeline, vectorOf, type Scenario } from './vector-model.js';

// The runner over generated vectors: what the rules call contract-conformant never reads `fail`, and an engine with
// a planted fault never reads `pass` on a vector that exercises it. Faults go in through the runner's test seams.

const STRESS = process.env.COVEN_STRESS === '1';
const RUNS = STRESS ? 3000 : 120;
const FAULT_RUNS = STRESS ? 600 : 30;
const RULE_IDS = new Set(CONTRACT_RULES.map((r) => r.id));

async function judge(s: Scenario, seams: VectorSeams = {}): Promise<VectorReport> {
  return runVectorDocument(vectorOf(s), '(generated)', seams);
}

/** The report, short: its verdict per expectation that did not pass, and the vector's ops. */
const explain = (s: Scenario, r: VectorReport) =>
  JSON.stringify({
    status: r.status,
    notPassed: r.expectations
      .filter((e) => e.status !== 'pass')
      .map((e) => ({ e: e.expectation, status: e.status, rule: e.rule, expected: e.expected, observed: e.observed })),
    ops: vectorOf(s).input.operations,
  });

describe('generated corpus-like vectors through the runner', () => {
  test(
    'contract-conformant behaviour never reads fail: every difference names a contract rule',
    { timeout: 600_000 },
    async () => {
      const seen = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(scenarioArbitrary, async (s) => {
          const report = await judge(s);
          const rules = report.expectations.filter((x) => x.status === 'differs').map((x) => x.rule);
          for (const key of [report.status, ...new Set(rules)]) seen.set(String(key), (seen.get(String(key)) ?? 0) + 1);
          expect(['pass', 'differs'], explain(s, report)).toContain(report.status);
          for (const e of report.expectations.filter((x) => x.status === 'differs'))
            expect(RULE_IDS.has(e.rule ?? ''), explain(s, report)).toBe(true);
        }),
        propertyParameters('generated vectors: no fail for conformant behaviour', RUNS),
      );
      console.info(`[property] verdicts and rules: ${JSON.stringify(Object.fromEntries(seen))}`);
    },
  );
});

/** One scenario per branch of the model, and the verdict the rules give it: the model is not the engine's echo. */
const BRANCHES: Array<{ name: string; change: Partial<Scenario>; status: string; rules: string[] }> = [
  { name: 'a session that succeeds', change: {}, status: 'pass', rules: [] },
  {
    name: 'a claim that lapsed before the restart',
    change: { diesAfterClaim: true, restartAfter: 180, timeoutMinutes: 600 },
    status: 'differs',
    rules: ['lapsed-claim-dispatched-under-fence'],
  },
  {
    name: 'a restart inside the lease',
    change: { diesAfterClaim: true, restartAfter: 20, timeoutMinutes: 600 },
    status: 'pass',
    rules: [],
  },
  {
    name: 'evidence lost after the side effect',
    change: { behavior: 'lost-after-side-effect' },
    status: 'differs',
    rules: ['ambiguous-run-stays-running', 'lost-evidence-awaits-operator-recovery'],
  },
  {
    name: 'a timeout the model expects failed',
    change: { behavior: 'timeout', timeoutExpected: 'failed' },
    status: 'differs',
    rules: ['timeout-settles-timed-out'],
  },
  { name: 'a timeout expected timed_out', change: { behavior: 'timeout' }, status: 'pass', rules: [] },
  {
    name: 'a cancel at the deadline instant',
    change: { behavior: 'timeout', cancelBeforeDeadline: 0 },
    status: 'pass',
    rules: [],
  },
];

const BASE: Scenario = {
  automationId: 'routine',
  day: 2,
  hour: 9,
  timeoutMinutes: 30,
  behavior: 'available',
  firstPassAfter: 0,
  diesAfterClaim: false,
  restartAfter: 1,
  cancelBeforeDeadline: null,
  lastPassAfter: 1,
  timeoutExpected: 'timed_out',
};

describe('each branch of the model', () => {
  test.each(BRANCHES)('$name: $status $rules', async ({ change, status, rules }) => {
    const s = { ...BASE, ...change };
    const report = await judge(s);
    const differing = report.expectations.filter((e) => e.status === 'differs').map((e) => e.rule);
    expect({ status: report.status, rules: [...new Set(differing)].sort() }, explain(s, report)).toEqual({
      status,
      rules,
    });
  });
});

/** Planted engine faults whose effect a vector's expectations can see, and the vectors that exercise each. */
const FAULTS: Array<{ name: string; seams: VectorSeams; exercised: (s: Scenario) => boolean }> = [
  {
    // A lost session reported as a clean success: only visible where the expectation speaks of the session's outcome.
    name: 'successWithoutEvidence',
    seams: { runtime: (r) => new FaultyRuntime(r, { successWithoutEvidence: true }) },
    exercised: (s) => s.behavior === 'lost-after-side-effect' && !timeline(s).lapsed,
  },
  {
    name: 'autoRetryAmbiguous',
    seams: { parts: faultyParts({ autoRetryAmbiguous: true }) },
    exercised: (s) => s.behavior === 'lost-after-side-effect',
  },
  {
    // A second session for one attempt: the fence dispatched twice.
    name: 'bindSecondSession',
    seams: { runtime: (r) => new FaultyRuntime(r, { bindSecondSession: true }) },
    exercised: () => true,
  },
  {
    // One fence generation owning two accepted runs: the fence skipped.
    name: 'acceptFenceTwice',
    seams: { store: (store) => new FaultyStore(store, RUN_ACCEPTED_TWICE) },
    exercised: () => true,
  },
];

describe.each(FAULTS)('with the planted fault $name', ({ name, seams, exercised }) => {
  test('no vector that exercises it reads pass', { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArbitrary.filter(exercised), async (s) => {
        const report = await judge(s, seams);
        expect(report.status, explain(s, report)).not.toBe('pass');
        expect(report.status, explain(s, report)).toBe('fail');
      }),
      propertyParameters(`generated vectors: planted ${name} never passes`, FAULT_RUNS),
    );
  });
});
