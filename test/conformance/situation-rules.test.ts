import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runFile } from '../../src/testkit/conformance/corpus.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';
import { runCli } from '../support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-conformance-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GOLDEN_01 = 'conformance/scenarios/scheduling/01-paused-creation-activation.json';
const read = (path: string) => JSON.parse(readFileSync(join(upstreamDir, path), 'utf8')) as Record<string, unknown>;

/** Writes a vector under a new id and file name, so nothing about it but its situation is upstream's. */
function renamed(path: string, id: string, change: (v: Record<string, unknown>) => void = () => undefined): string {
  const vector = { ...read(path), vectorId: id };
  change(vector);
  const file = join(dir, `${id}.json`);
  writeFileSync(file, JSON.stringify(vector));
  return file;
}

describe.skipIf(!upstreamAvailable)('differences are decided by the situation, never by the file', () => {
  test('golden 1 under another id and file differs by the same rule', async () => {
    const report = await runFile(renamed(GOLDEN_01, 'local.paused-then-activated'));
    const rules = report.vectors[0]!.expectations.filter((e) => e.status === 'differs').map((e) => e.rule);
    expect(rules.length).toBeGreaterThan(0);
    expect(new Set(rules)).toEqual(new Set(['paused-slot-disposed']));
  });

  test('the same vector without its activation no longer meets the rule: its expectations fail', async () => {
    const file = renamed(GOLDEN_01, 'local.never-activated', (v) => {
      const input = v.input as { operations: Array<{ op: string }> };
      input.operations = input.operations.filter((o) => o.op !== 'activate');
    });
    const report = await runFile(file);
    expect(report.status).toBe('fail');
  });

  test('a file that is not JSON is a crash of that file, and the CLI exits 1', async () => {
    const bad = join(dir, 'not-json.json');
    writeFileSync(bad, '{ not json');
    expect((await runFile(bad)).status).toBe('crash');
    const { out, code } = await runCli('conformance', 'run', bad, join(upstreamDir, GOLDEN_01));
    expect(code).toBe(1);
    expect(out).toMatch(/2 files: 0 pass, 1 differ, 0 unsupported, 0 fail, 1 crash/);
  });

  test('a failing expectation makes the CLI exit 1', async () => {
    const file = renamed('conformance/vectors/schedules/sched-daily-default-hour.json', 'local.wrong-count', (v) => {
      (v.expected as Record<string, unknown>).dispatchCount = 99;
    });
    const { out, code } = await runCli('conformance', 'run', file);
    expect(code).toBe(1);
    expect(out).toMatch(/1 files: 0 pass, 0 differ, 0 unsupported, 1 fail, 0 crash/);
  });

  test('with no files the CLI runs the corpus it finds under the upstream folder', async () => {
    const previous = process.env.COVEN_UPSTREAM_DIR;
    const upstream = join(dir, 'upstream');
    const scheduling = join(upstream, 'conformance', 'scenarios', 'scheduling');
    (await import('node:fs')).mkdirSync(scheduling, { recursive: true });
    writeFileSync(
      join(scheduling, 'golden-02.json'),
      readFileSync(join(upstreamDir, 'conformance/scenarios/scheduling/02-twice-daily-routine.json')),
    );
    process.env.COVEN_UPSTREAM_DIR = upstream;
    try {
      const { out, code } = await runCli('conformance', 'run');
      expect(out).toMatch(/1 files: 1 pass, 0 differ, 0 unsupported, 0 fail, 0 crash/);
      expect(code).toBe(0);
    } finally {
      if (previous === undefined) delete process.env.COVEN_UPSTREAM_DIR;
      else process.env.COVEN_UPSTREAM_DIR = previous;
    }
  });
});
