import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { SPEC_FILE } from '../../src/spec/lifecycle-spec.js';
import { runCli } from '../support/run-cli.js';

const root = packageRoot();
const dir = mkdtempSync(join(tmpdir(), 'coven-invariants-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spawnCli = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), ...args], {
    cwd: root,
    encoding: 'utf8',
  });

/** The example: the dispatcher gains automatic work out of recovery_required, behind a guard of its own. */
function plantedSpec(): string {
  const spec = JSON.parse(readFileSync(join(root, SPEC_FILE), 'utf8')) as {
    machines: Array<{ id: string; transitions: unknown[] }>;
  };
  spec.machines
    .find((m) => m.id === 'occurrence.v1')!
    .transitions.push({
      from: 'recovery_required',
      to: 'dispatching',
      on: 'automatic_retry',
      actor: 'dispatcher',
      guard: { id: 'retryAmbiguous', text: 'a user edit' },
    });
  const file = join(dir, 'edited.json');
  writeFileSync(file, JSON.stringify(spec, null, 2));
  return file;
}

describe('coven-automata invariants behaves like a CLI', () => {
  test('--help prints the options and what runs, and runs nothing', () => {
    const { status, stdout, stderr } = spawnCli('invariants', '--help');
    expect(status).toBe(0);
    expect(stdout).toContain('Usage: coven-automata invariants [options]');
    for (const option of ['--runs', '--seed', '--stores', '--no-self-check', '--result', '--spec'])
      expect(stdout).toContain(option);
    expect(stdout).toContain('structural properties');
    expect(stderr).not.toContain('seed');
  });

  test('the root help describes the command without pointing to a README section', () => {
    const { stdout } = spawnCli('--help');
    expect(stdout).toMatch(/invariants \[options\]\s+prove the ten invariants/);
    expect(stdout).not.toContain('--help-invariants');
  });

  test('a planted spec edit exits 1 naming the violated invariant, as text and as --json after the subcommand', async () => {
    const file = plantedSpec();
    const text = await runCli('invariants', '--spec', file, '--runs', '1', '--stores', 'memory');
    expect(text.code).toBe(1);
    expect(text.out).toContain('structural property ambiguity-exits-by-operator-only of ambiguous-never-auto-retried');
    expect(text.out).toMatch(/NOTHING PROVEN: .* it violates .*ambiguous-never-auto-retried/);
    const json = await runCli('invariants', '--spec', file, '--json');
    expect(json.code).toBe(1);
    const result = JSON.parse(json.out) as { passed: boolean; specChecks: Array<{ property?: string; problems: [] }> };
    expect(result.passed).toBe(false);
    const failed = result.specChecks.filter((c) => c.problems.length > 0).map((c) => c.property);
    expect(failed).toContain('ambiguity-exits-by-operator-only');
  });

  test('--spec proves a sound edit of a copy of the spec end to end (machines built in memory), exit 0', async () => {
    const spec = JSON.parse(readFileSync(join(root, SPEC_FILE), 'utf8')) as { source: string };
    spec.source = 'Our own copy of the lifecycle page.';
    const file = join(dir, 'sound.json');
    writeFileSync(file, JSON.stringify(spec, null, 2));
    const run = await runCli('invariants', '--spec', file, '--runs', '1', '--stores', 'memory', '--no-self-check');
    expect(run.out).not.toContain('NOTHING PROVEN');
    expect(run.out).toContain('all invariants hold');
    expect(run.code).toBe(0);
  }, 120_000);

  test('a bad option is one line naming it, exit 1', async () => {
    const { code, err } = await runCli('invariants', '--stores', 'memory,redis');
    expect(code).toBe(1);
    expect(err).toBe('--stores takes memory, json, sqlite, postgres; unknown: redis');
  });
});
