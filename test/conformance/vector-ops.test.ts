import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { legacyDaily } from '../support/legacy-definition.js';
import { runVector } from '../../src/testkit/conformance/vector-runner.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-vector-ops-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAILY = legacyDaily('ACTIVE');

let n = 0;
/** A vector of the runner's own, over one daily definition. */
async function run(operations: Array<Record<string, unknown>>, expected: Record<string, unknown>) {
  const file = join(dir, `v${++n}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      vectorId: `local.ops-${n}`,
      profile: 'structural',
      title: 'op mapping',
      virtualTime: { start: '2026-03-01T00:00:00.000Z' },
      input: { definitions: [DAILY], operations },
      expected,
    }),
  );
  return runVector(file);
}
const statusOf = (report: Awaited<ReturnType<typeof run>>, expectation: string) =>
  report.expectations.find((e) => e.expectation === expectation)?.status;

describe('vector ops map to the engine mechanisms', () => {
  test('cancel of running work goes through the cancellation commands and settles it cancelled', async () => {
    const report = await run(
      [
        { op: 'runtimeBehavior', behavior: 'timeout' },
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
        { op: 'cancel', automationId: 'daily', at: '2026-03-01T10:01:00.000Z' },
        { op: 'tick', at: '2026-03-01T10:02:00.000Z' },
      ],
      {
        occurrences: [{ automationId: 'daily', state: 'cancelled' }],
        runs: [{ automationId: 'daily', status: 'cancelled' }],
      },
    );
    expect(report.status, JSON.stringify(report.expectations)).toBe('pass');
  });

  test('cancel of planned work settles it cancelled before anything is dispatched', async () => {
    const report = await run(
      [
        { op: 'crash', during: 'plan' },
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
        { op: 'cancel', automationId: 'daily', at: '2026-03-01T10:01:00.000Z' },
      ],
      { occurrences: [{ automationId: 'daily', state: 'cancelled' }], runs: [], dispatchCount: 0 },
    );
    expect(report.status, JSON.stringify(report.expectations)).toBe('pass');
  });

  test('tamperReceipt alters a sealed receipt underneath the engine: the check and the doctor both see it', async () => {
    const ops = [{ op: 'tick', at: '2026-03-01T10:00:00.000Z' }, { op: 'tamperReceipt' }, { op: 'verifyReceipts' }];
    const tampered = await run(ops, {
      receipts: { count: 1, allVerify: true },
      doctor: { findingCodes: ['receipts.unverified'] },
    });
    expect(statusOf(tampered, 'receipts')).toBe('fail');
    expect(statusOf(tampered, 'doctor.receipts.unverified')).toBe('pass');
    const intact = await run([ops[0]!, ops[2]!], {
      receipts: { count: 1, allVerify: true },
      doctor: { findingCodes: [] },
    });
    expect(intact.status, JSON.stringify(intact.expectations)).toBe('pass');
  });

  test('setLeader, subscribe and deliver become the doctor scheduler facts', async () => {
    const noLeader = await run([{ op: 'setLeader', available: false }], {
      doctor: { findingCodes: ['scheduler.no-leader'] },
    });
    expect(noLeader.status).toBe('pass');
    const lagging = await run(
      [
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
        { op: 'subscribe', afterCursor: 0 },
      ],
      { doctor: { findingCodes: ['events.cursor-lag'] } },
    );
    expect(lagging.status).toBe('pass');
    const delivered = await run(
      [
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
        { op: 'subscribe', afterCursor: 0 },
        { op: 'deliver', afterCursor: 0 },
      ],
      { doctor: { noCodes: ['events.cursor-lag'] } },
    );
    expect(delivered.status).toBe('pass');
  });

  test('setRetention sets the engine retention the doctor judges history against', async () => {
    const ops = (window: string) => [
      { op: 'setRetention', window },
      { op: 'runNow', automationId: 'daily', adoptionKey: 'retention-probe-1', at: '2026-03-01T10:00:00.000Z' },
      { op: 'advance', at: '2026-03-03T10:00:00.000Z' },
    ];
    const expected = { doctor: { findingCodes: ['disk.retention-pressure'] } };
    expect((await run(ops('1h'), expected)).status).toBe('pass');
    const short = await run(ops('1s'), expected);
    expect(short.status).toBe('pass');
  });

  test('an op outside the vector format is unsupported with its reason, and so is what depends on it', async () => {
    const report = await run(
      [
        { op: 'teleport', at: '2026-03-01T10:00:00.000Z' },
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
      ],
      { dispatchCount: 0 },
    );
    expect(statusOf(report, 'dispatchCount')).toBe('unsupported');
    expect(report.expectations.find((e) => e.expectation === 'op unknown op teleport')?.status).toBe('unsupported');
  });

  test('deliveryBehavior drives the delivery port: a commit failure never reads as success, a commit does', async () => {
    const ops = (delivery: string) => [
      { op: 'deliveryBehavior', delivery },
      { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
    ];
    const failed = await run(ops('commit-failure'), {
      receipts: { count: 1, allVerify: true, outcomes: ['failed'] },
      doctor: { findingCodes: ['delivery.commit-failures'] },
      invariants: ['no-false-success-under-injected-failure'],
    });
    expect(failed.status, JSON.stringify(failed.expectations)).toBe('pass');
    const notes = failed.expectations.filter((e) => e.expectation === 'note').map((e) => e.reason);
    expect(notes.join(' ')).toMatch(/daily revised to deliver to the atomic outputTarget conformance\/daily\.out/);
    const committed = await run(ops('commit'), {
      runs: [{ automationId: 'daily', status: 'succeeded' }],
      receipts: { count: 1, allVerify: true, outcomes: ['succeeded'] },
      doctor: { noCodes: ['delivery.commit-failures'] },
    });
    expect(committed.status, JSON.stringify(committed.expectations)).toBe('pass');
    const unknown = await run([{ op: 'deliveryBehavior', delivery: 'lossy' }], {});
    expect(unknown.expectations.find((e) => e.expectation === 'op deliveryBehavior lossy')?.status).toBe('unsupported');
  });

  test('authority ops go through the engine commands; a refused one is kept under its label', async () => {
    const refused = await run([{ op: 'revokeFamiliar', familiarId: 'nobody', label: 'revoke-unknown' }], {
      refusals: [{ refusalId: 'revoke-unknown', reasonMatches: 'no familiar' }],
    });
    expect(refused.status, JSON.stringify(refused.expectations)).toBe('pass');
    const unavailable = await run(
      [
        { op: 'setAuthority', available: false },
        { op: 'tick', at: '2026-03-01T10:00:00.000Z' },
      ],
      { occurrences: [{ automationId: 'daily', state: 'succeeded' }], dispatchCount: 1 },
    );
    // Unbound definitions never consult the authority service.
    expect(unavailable.status, JSON.stringify(unavailable.expectations)).toBe('pass');
  });
});
