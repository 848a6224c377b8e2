import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { EXTENSION_SPEC_FILE, loadExtensionSpec } from '../../src/spec/extension-spec.js';
import { loadLifecycleSpec, SPEC_FILE } from '../../src/spec/lifecycle-spec.js';
import { GENERATED_FROM } from '../../machines/index.js';
import { generatedFromOf } from '../../src/spec/spec-digest.js';
import { checkSpecOnDisk } from '../../src/testkit/invariants/spec-on-disk.js';
import { formatSuite } from '../../src/testkit/invariants/report.js';
import { runInvariantSuite } from '../../src/testkit/invariants/suite.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-spec-on-disk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const contract = () =>
  JSON.parse(readFileSync(join(packageRoot(), SPEC_FILE), 'utf8')) as {
    machines: Array<{ id: string; transitions: Array<Record<string, unknown>> }>;
  };

/** The package's contract spec with `edit` applied, written to a file of its own. */
function planted(name: string, edit: (spec: ReturnType<typeof contract>) => void): string {
  const spec = contract();
  edit(spec);
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(spec, null, 2));
  return file;
}

const problemsOf = (checks: ReturnType<typeof checkSpecOnDisk>) =>
  Object.fromEntries(checks.map((c) => [c.check, c.problems]));

describe('the suite checks the spec on disk before proving anything', () => {
  it('the package spec is sound and its machines are the ones generated from it', () => {
    expect(checkSpecOnDisk().flatMap((c) => c.problems)).toEqual([]);
  });

  it('an exit from a terminal state is unsound, names its invariant and shortest path, and is not built', () => {
    const specFile = planted('terminal-exit', (spec) =>
      spec.machines
        .find((m) => m.id === 'run.v1')!
        .transitions.push({ from: 'succeeded', to: 'running', on: 'attempt_started', actor: 'dispatcher' }),
    );
    const problems = problemsOf(checkSpecOnDisk({ specFile }));
    expect(problems['the spec on disk is sound (its static proofs hold)']!.join('\n')).toContain('succeeded');
    expect(problems['structural property terminal-states-stay-terminal of terminal-no-regress']).toEqual([
      "run.v1 succeeded -> running on attempt_started (dispatcher) leaves the contract's terminal state 'succeeded': " +
        'run.v1 accepted -attempt_started (dispatcher)-> running -attempt_settled (dispatcher)-> succeeded ' +
        '-attempt_started (dispatcher)-> running',
    ]);
    expect(Object.keys(problems).some((check) => check.includes('build in memory'))).toBe(false);
    const stale = problemsOf(checkSpecOnDisk({ specFile, generatedFrom: GENERATED_FROM }));
    expect(stale['the generated machines are those of the spec on disk']).toEqual([
      `machines/ were not generated from ${specFile} as it is now: run \`npm run generate\``,
    ]);
  });

  it('a sound edit is built in memory; against the generated machines/ it is stale machines', () => {
    const specFile = planted('reworded-guard', (spec) => {
      const guarded = spec.machines[0]!.transitions.find((t) => t.guard !== undefined)!;
      guarded.guard = { ...(guarded.guard as object), text: 'reworded by a user edit' };
    });
    const built = checkSpecOnDisk({ specFile });
    expect(built.flatMap((c) => c.problems)).toEqual([]);
    expect(built.at(-1)!.check).toBe(
      `the engine's machines build in memory from ${specFile} and ${join(packageRoot(), EXTENSION_SPEC_FILE)}`,
    );
    const problems = problemsOf(checkSpecOnDisk({ specFile, generatedFrom: GENERATED_FROM }));
    expect(problems['the spec on disk is sound (its static proofs hold)']).toEqual([]);
    expect(problems['the generated machines are those of the spec on disk']).toHaveLength(1);
  });

  it('a file that is not a spec is refused by its schema', () => {
    const specFile = join(dir, 'broken.json');
    writeFileSync(specFile, '{ "machines": 3 }');
    const extensionFile = join(packageRoot(), EXTENSION_SPEC_FILE);
    const [only, ...rest] = checkSpecOnDisk({ specFile, extensionFile });
    expect(rest).toEqual([]);
    expect(only!.check).toBe('the spec files parse and match their schemas');
    expect(only!.problems.join('\n')).toContain('broken.json');
  });

  it('a spec file that does not exist is a failed check naming it, not a crash', () => {
    const specFile = join(dir, 'missing.json');
    const [only, ...rest] = checkSpecOnDisk({ specFile });
    expect(rest).toEqual([]);
    expect(only!.problems.join('\n')).toContain(`no such file or directory, open '${specFile}'`);
  });

  it('runInvariantSuite fails without running a property, and the report says nothing was proven', async () => {
    const specFile = planted('suite-stale', (spec) => {
      spec.machines[0]!.transitions.reverse();
    });
    const spec = { specFile, generatedFrom: GENERATED_FROM };
    const result = await runInvariantSuite({ runs: 1, seed: 1, stores: ['memory'], spec });
    expect(result.passed).toBe(false);
    expect(result.rows).toEqual([]);
    expect(result.machine).toEqual([]);
    expect(formatSuite(result)).toContain('NOTHING PROVEN: the spec on disk failed its checks');
  });

  it('a sound edit the generator accepted fails on the structural property it violates, by invariant', async () => {
    // The example: an unguarded path into an execution state that skips the claim, regenerated.
    const specFile = planted('regenerated', (spec) =>
      spec.machines
        .find((m) => m.id === 'occurrence.v1')!
        .transitions.push({ from: 'eligible', to: 'dispatching', on: 'attempt_adopted', actor: 'dispatcher' }),
    );
    const generatedFrom = generatedFromOf(loadLifecycleSpec(specFile), loadExtensionSpec());
    const result = await runInvariantSuite({ runs: 1, seed: 1, stores: ['memory'], spec: { specFile, generatedFrom } });
    const failing = result.specChecks.filter((c) => c.problems.length > 0);
    expect(failing.every((c) => c.property !== undefined)).toBe(true);
    expect(failing.map((c) => c.property)).toContain('execution-passes-claim-and-adoption');
    expect(result.passed).toBe(false);
    expect(formatSuite(result)).toMatch(/it violates adoption-before-side-effects/);
  });
});
