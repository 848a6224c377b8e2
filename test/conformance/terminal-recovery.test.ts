import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { decidingRule, type Situation } from '../../src/testkit/conformance/contract-rules.js';
import { runFile } from '../../src/testkit/conformance/corpus.js';
import { SessionLedgerRuntime } from '../../src/testkit/conformance/session-ledger-runtime.js';
import { REOPEN_PATHS } from '../../src/testkit/conformance/suite-recovery.js';
import type { ExpectationResult } from '../../src/testkit/conformance/vector-format.js';
import { readUpstreamJson, upstreamAvailable, upstreamDir } from '../support/upstream.js';

const SUITE = 'conformance/runner/runtime-authority-terminal-recovery.vectors.json';
const RULE = 'recovery-required-attempt-is-ambiguous';
const dir = mkdtempSync(join(tmpdir(), 'coven-terminal-recovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Case = Record<string, unknown> & { caseId: string; expected: Record<string, unknown> };
type Suite = { schemaVersion: string; cases: Case[] };

/** The suite's first case, changed and renamed, in a file of its own: only its situation is upstream's. */
function oneCase(id: string, change: (c: Case) => void): string {
  const suite = readUpstreamJson<Suite>(SUITE);
  const c = structuredClone(suite.cases[0]!);
  c.caseId = id;
  change(c);
  const file = join(dir, `${id}.json`);
  writeFileSync(file, JSON.stringify({ schemaVersion: suite.schemaVersion, cases: [c] }));
  return file;
}

const notPassing = (e: ExpectationResult[]) => e.filter((x) => x.status !== 'pass');

describe.skipIf(!upstreamAvailable)('runtime-authority-terminal-recovery on the real engine', () => {
  test('no terminal session status settles a reopened run: all pass but the ambiguous attempt, by its rule', async () => {
    const report = await runFile(join(upstreamDir, SUITE));
    const suite = readUpstreamJson<Suite>(SUITE);
    expect(report.vectors).toHaveLength(suite.cases.length);
    for (const [i, vector] of report.vectors.entries()) {
      const keys = Object.keys(suite.cases[i]!.expected);
      expect(vector.expectations).toHaveLength(keys.length * REOPEN_PATHS.length);
      expect(notPassing(vector.expectations).map((e) => [e.expectation, e.status, e.rule, e.observed])).toEqual(
        REOPEN_PATHS.map((path) => [`attemptState[${path}]`, 'differs', RULE, 'ambiguous']),
      );
    }
  });

  test('a session that ends before the engine loses it settles by its evidence: the interpreter fails it', async () => {
    // Terminal before the sender's own pass: with its session bound, the engine settles on verified evidence.
    const file = oneCase('local.ended-before-reopen', (c) => {
      c.terminalAt = new Date(Date.parse(String(c.startedAt)) + 500).toISOString();
    });
    const report = await runFile(file);
    expect(report.status).toBe('fail');
    const failed = notPassing(report.vectors[0]!.expectations).filter((e) => e.status === 'fail');
    expect(failed.map((e) => e.expectation)).toEqual(
      expect.arrayContaining([
        'occurrenceState[evidence_lost]',
        'runState[evidence_lost]',
        'attemptState[evidence_lost]',
        'settledRunCount[evidence_lost]',
      ]),
    );
    expect(failed.find((e) => e.expectation === 'attemptState[evidence_lost]')?.observed).toBe('succeeded');
    // The launch whose answer was lost: the runtime's ledger proves the session started before the claim is
    // judged, so the engine binds it and settles on its evidence there too.
    expect(failed.find((e) => e.expectation === 'attemptState[lease_expired]')?.observed).toBe('succeeded');
  });

  test('counts are observed, not echoed: an expectation the engine does not meet fails', async () => {
    const file = oneCase('local.two-runs-expected', (c) => {
      c.expected = { ...c.expected, runRows: 2, authoritySidecarRows: 1 };
    });
    const failed = notPassing((await runFile(file)).vectors[0]!.expectations).filter((e) => e.status === 'fail');
    expect(failed.map((e) => [e.expectation, e.observed])).toEqual([
      ['runRows[lease_expired]', 1],
      ['authoritySidecarRows[lease_expired]', 0],
      ['runRows[evidence_lost]', 1],
      ['authoritySidecarRows[evidence_lost]', 0],
    ]);
  });
});

describe(`the ${RULE} rule decides by the situation`, () => {
  const situation = (occurrenceState: string, runState: string, observed = 'ambiguous'): Situation => ({
    vector: { vectorId: 'local.any', profile: '', title: 'any', input: {}, expected: {} },
    expectation: 'attemptState[anywhere]',
    kind: 'attemptState',
    expected: 'started',
    observed,
    seen: {
      occurrences: [{ automationId: 'x', state: occurrenceState }],
      runs: [{ runId: 'r', automationId: 'x', state: runState }],
      attemptStates: new Map([['r', [observed]]]),
      quarantined: [],
      heldRuns: [],
      refusedCodes: [],
    },
  });

  test('an ambiguous attempt of a running run whose occurrence waits in recovery_required', () => {
    expect(decidingRule(situation('recovery_required', 'running'))?.id).toBe(RULE);
  });

  test('not a settled run, an occurrence elsewhere, or an attempt settled otherwise', () => {
    expect(decidingRule(situation('recovery_required', 'failed'))).toBeUndefined();
    expect(decidingRule(situation('failed', 'running'))).toBeUndefined();
    expect(decidingRule(situation('recovery_required', 'running', 'succeeded'))).toBeUndefined();
  });
});

describe('the session-ledger runtime', () => {
  const plan = { at: '2026-09-03T12:00:05.000Z', status: 'completed' as const, exitCode: 0, output: '{}' };
  const request = { automationId: 'a', occurrenceId: 'o', runId: 'r', attemptId: 'at-1', attemptNumber: 1 };
  const launch = async (runtime: SessionLedgerRuntime) => {
    const answer = await runtime.launch(
      { ...request, sessionKey: 'k1', prompt: 'p', deadlineAt: '2026-09-03T13:00:00.000Z' },
      new Date('2026-09-03T12:00:00.000Z'),
    );
    if (answer.outcome !== 'started') throw new Error('not started');
    return answer.sessionId;
  };

  test('a restart loses a running session; its terminal row is reported once it lands', async () => {
    const runtime = new SessionLedgerRuntime();
    runtime.nextSession = plan;
    const id = await launch(runtime);
    expect(await runtime.observe(id, new Date('2026-09-03T12:00:01.000Z'))).toMatchObject({ status: 'running' });
    runtime.restart();
    expect(await runtime.observe(id, new Date('2026-09-03T12:00:02.000Z'))).toMatchObject({ status: 'lost' });
    expect(await runtime.observe(id, new Date('2026-09-03T12:00:05.000Z'))).toMatchObject({
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
    });
  });

  test('only completed with exit 0 succeeds; a stop never rewrites a terminal row', async () => {
    const runtime = new SessionLedgerRuntime();
    runtime.nextSession = { ...plan, status: 'idle', exitCode: null };
    const id = await launch(runtime);
    const after = new Date('2026-09-03T12:00:06.000Z');
    await runtime.cancel(id, after);
    expect(await runtime.observe(id, after)).toMatchObject({ outcome: 'failed', exitCode: null, cancelled: false });
    expect(runtime.statusAt(runtime.sessionsOf('at-1')[0]!, after)).toEqual({ status: 'idle', exitCode: null });
    expect(runtime.stopRequests).toHaveLength(1);
  });

  test('a lost launch answer: the session starts, the call throws, and only a terminal row tells', async () => {
    const runtime = new SessionLedgerRuntime();
    runtime.nextSession = plan;
    runtime.loseNextLaunchAnswer = true;
    await expect(launch(runtime)).rejects.toThrow(/sender died/);
    expect(runtime.sessionsOf('at-1')).toHaveLength(1);
    expect(runtime.launchCalls).toBe(1);
    expect(await runtime.launchEvidence('k1', new Date('2026-09-03T12:00:04.000Z'))).toMatchObject({
      evidence: 'unknown',
    });
    expect(await runtime.launchEvidence('k1', new Date('2026-09-03T12:00:05.000Z'))).toMatchObject({
      evidence: 'started',
      sessionId: runtime.sessionsOf('at-1')[0]!.sessionId,
    });
  });
});
