import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { decidingRule, emptySeen, type Situation } from '../../src/testkit/conformance/contract-rules.js';
import { runSuite } from '../../src/testkit/conformance/suite-runner.js';
import type { VectorReport } from '../../src/testkit/conformance/vector-format.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';

const suiteFile = (suite: string) => join(upstreamDir, 'conformance', 'runner', `${suite}.vectors.json`);
const scratch = mkdtempSync(join(tmpdir(), 'runner-suites-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The suite with one case's expectation changed: the interpreter must judge it by the engine, not echo it. */
function altered(suite: string, caseIndex: number, key: string, value: unknown): string {
  const doc = JSON.parse(readFileSync(suiteFile(suite), 'utf8')) as { cases: Array<{ expected: object }> };
  (doc.cases[caseIndex]!.expected as Record<string, unknown>)[key] = value;
  const file = join(scratch, `${suite}-${key}.json`);
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

const statusOf = (report: VectorReport, key: string) => report.expectations.find((e) => e.expectation === key);

describe.skipIf(!upstreamAvailable)('the scheduler reliability runner suites drive the engine', () => {
  test('scheduler-leadership-fencing: every case passes on real generations', async () => {
    const reports = await runSuite(suiteFile('scheduler-leadership-fencing'));
    expect(reports.map((r) => r.status)).toEqual(['pass', 'pass', 'pass']);
    const wrong = await runSuite(altered('scheduler-leadership-fencing', 1, 'secondGeneration', 3));
    expect(statusOf(wrong[1]!, 'secondGeneration')).toMatchObject({ status: 'fail', observed: 2 });
  });

  test('cancellation-timeout-arbitration: the acknowledged cancellation decides; one stop reaches the runtime', async () => {
    const reports = await runSuite(suiteFile('cancellation-timeout-arbitration'));
    expect(reports.map((r) => r.status)).toEqual(['differs', 'differs']);
    const rules = new Set(
      reports.flatMap((r) => r.expectations.flatMap((e) => (e.rule === undefined ? [] : [e.rule]))),
    );
    expect([...rules]).toEqual(['cancel-pending-until-acknowledged']);
    expect(statusOf(reports[0]!, 'runtimeStopCount')?.status).toBe('pass');
    const wrong = await runSuite(altered('cancellation-timeout-arbitration', 0, 'runtimeStopCount', 2));
    expect(statusOf(wrong[0]!, 'runtimeStopCount')).toMatchObject({ status: 'fail', observed: 1 });
  });

  test('startup-reconciliation-wake: the startup pass launches before the first wait; an activation wakes it', async () => {
    const reports = await runSuite(suiteFile('startup-reconciliation-wake'));
    const passed = (r: VectorReport) => r.expectations.filter((e) => e.status === 'pass').map((e) => e.expectation);
    expect(passed(reports[0]!)).toEqual(
      expect.arrayContaining(['productionStartPath', 'systemWaitObserved', 'launchedBeforeFirstWait', 'launchCount']),
    );
    expect(passed(reports[1]!)).toEqual(expect.arrayContaining(['actionAccepted', 'wakeObserved', 'lastPassTrigger']));
    expect(reports.flatMap((r) => r.expectations.filter((e) => e.status === 'fail'))).toEqual([]);
    const wrong = await runSuite(altered('startup-reconciliation-wake', 1, 'lastPassTrigger', 'startup'));
    expect(statusOf(wrong[1]!, 'lastPassTrigger')).toMatchObject({ status: 'fail', observed: 'wake' });
  });
});

describe('the rules these suites differ by apply only where their situation holds', () => {
  const situation = (extra: Partial<Situation>, seen: Partial<Situation['seen']> = {}): Situation => ({
    vector: { vectorId: 'any', profile: '', title: 'any', input: {}, expected: {} },
    expectation: 'x',
    kind: 'x',
    expected: undefined,
    observed: undefined,
    seen: { ...emptySeen(), ...seen },
    ...extra,
  });
  const cancelled = (acknowledgedAt: string | undefined) => ({
    state: 'cancelled',
    deadlineAt: '2099-10-01T08:30:00.000Z',
    cancellation: { requestedAt: '2099-10-01T08:29:00.000Z', ...(acknowledgedAt ? { acknowledgedAt } : {}) },
  });

  test('cancel-pending-until-acknowledged: only an acknowledgment before the deadline', () => {
    const pending = { expected: 'cancelled', observed: 'cancel_pending' };
    const rule = (ack: string | undefined) => decidingRule(situation(pending, { occurrences: [cancelled(ack)] }))?.id;
    expect(rule('2099-10-01T08:29:00.000Z')).toBe('cancel-pending-until-acknowledged');
    expect(rule('2099-10-01T08:31:00.000Z')).toBeUndefined();
    expect(rule(undefined)).toBeUndefined();
  });

  test('runtime-confirmed-launch: only when every attempt was acknowledged by its runtime', () => {
    const rule = (state: string, attempt: string) =>
      decidingRule(
        situation(
          { expected: 'recovery_required', observed: state },
          { occurrences: [{ state }], attemptStates: new Map([['run-1', [attempt]]]) },
        ),
      )?.id;
    expect(rule('running', 'observing')).toBe('runtime-confirmed-launch');
    expect(rule('running', 'ambiguous')).toBeUndefined();
    expect(rule('running', 'dispatching')).toBeUndefined();
    // A session that ended settles on its evidence: whatever the reference expected of it is not this rule's.
    expect(rule('succeeded', 'succeeded')).toBeUndefined();
  });
});
