import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { legacyDaily } from '../support/legacy-definition.js';
import { PREREQUISITES, UNAUTHORIZED_READ } from '../../src/testkit/conformance/prerequisites.js';
import type { ConformanceVector } from '../../src/testkit/conformance/vector-format.js';
import { runVector } from '../../src/testkit/conformance/vector-runner.js';
import { envelope, VectorRun } from '../../src/testkit/conformance/vector-session.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-prerequisites-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAILY = legacyDaily('PAUSED');

const vector = (prerequisites: string[]): ConformanceVector => ({
  vectorId: 'local.prerequisites',
  profile: 'privacy',
  title: 'prerequisites',
  prerequisites,
  virtualTime: { start: '2026-03-01T00:00:00.000Z' },
  input: { definitions: [DAILY], operations: [{ op: 'tick', at: '2026-03-01T10:00:00.000Z' }] },
  expected: { refusals: [{ refusalId: UNAUTHORIZED_READ, reasonMatches: 'not authorized' }] },
});

async function runFile(v: ConformanceVector) {
  const file = join(dir, `${v.prerequisites!.join('+').replace(/[^a-z0-9.]/gi, '-')}.json`);
  writeFileSync(file, JSON.stringify(v));
  return runVector(file);
}

describe('prerequisites the runner provides', () => {
  test('coven.automations.acl.v1: definitions restricted at setup, the probe records the outsider refusal', async () => {
    const report = await runFile(vector(['coven.automations.acl.v1']));
    expect(report.status).toBe('pass');
    expect(report.expectations.find((e) => e.expectation === `refusals.${UNAUTHORIZED_READ}`)?.status).toBe('pass');
    // The refusal's wording matched upstream's "not authorized", so no wording note was left.
    expect(report.expectations.some((e) => e.reason?.includes('reference wording'))).toBe(false);
  });

  test('the probe records no refusal where reads are not restricted, so the expectation cannot pass by default', async () => {
    const run = new VectorRun(vector(['coven.automations.acl.v1']));
    const imported = await run.engine.commands.handle(
      envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [DAILY] }),
    );
    expect(imported.outcome).toBe('committed');
    const acl = PREREQUISITES['coven.automations.acl.v1']!;
    await acl.probe(run);
    expect(run.refusals.has(UNAUTHORIZED_READ)).toBe(false);
    expect(run.notes.join('\n')).toMatch(/conformance-outsider's run.history.v1 .* was not refused by the ACL/);
    await acl.setup(run);
    await acl.probe(run);
    expect(run.refusals.get(UNAUTHORIZED_READ)?.error).toMatchObject({ code: 'AUTHORITY_REQUIRED', httpStatus: 403 });
  });

  test('a prerequisite the engine does not provide leaves what depends on it unsupported, with its name', async () => {
    const report = await runFile(vector(['opencoven.example.v1@pinned']));
    expect(report.status).toBe('unsupported');
    const refusal = report.expectations.find((e) => e.expectation === `refusals.${UNAUTHORIZED_READ}`);
    expect(refusal?.reason).toContain('prerequisite opencoven.example.v1@pinned');
  });
});
