import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import {
  buildMachineSet,
  GENERATED_MACHINE_SET,
  machinesInUse,
  runOnMachines,
  type MachineEntity,
} from '../../src/domain/machine-set.js';
import { loadExtensionSpec } from '../../src/spec/extension-spec.js';
import { loadLifecycleSpec, SPEC_FILE, type LifecycleSpec } from '../../src/spec/lifecycle-spec.js';
import { formatSuite } from '../../src/testkit/invariants/report.js';
import { runInvariantSuite } from '../../src/testkit/invariants/suite.js';
import { World } from '../../src/testkit/invariants/world.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-spec-proof-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const packageSpec = (): LifecycleSpec => JSON.parse(readFileSync(join(packageRoot(), SPEC_FILE), 'utf8'));

function written(name: string, edit: (spec: LifecycleSpec) => void): string {
  const spec = packageSpec();
  edit(spec);
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(spec, null, 2));
  return file;
}

const machineOf = (spec: LifecycleSpec, id: string) => spec.machines.find((m) => m.id === id)!;
const SMALL = { runs: 2, machineRuns: 20, seed: 40, stores: ['memory' as const] };

describe('machines built in memory from a spec', () => {
  it("built from the package's specs, every machine is the generated one, node for node", () => {
    const built = buildMachineSet(loadLifecycleSpec(), loadExtensionSpec());
    expect(built.problems).toEqual([]);
    for (const entity of Object.keys(GENERATED_MACHINE_SET) as MachineEntity[])
      expect(JSON.stringify(built.machines![entity].definition), entity).toBe(
        JSON.stringify(GENERATED_MACHINE_SET[entity].definition),
      );
  });

  it('a guard the guard catalogue does not implement is refused by name', () => {
    const spec = packageSpec();
    machineOf(spec, 'occurrence.v1').transitions.push({
      from: 'recovering',
      to: 'failed',
      on: 'operator_gave_up',
      actor: 'command_handler',
      guard: { id: 'operatorGaveUp', text: 'a user guard' },
    });
    const built = buildMachineSet(spec, loadExtensionSpec());
    expect(built.machines).toBeUndefined();
    expect(built.problems).toEqual([
      "occurrence.v1 recovering -> failed on operator_gave_up (command_handler): guard 'operatorGaveUp' is not " +
        'implemented by the guard catalogue',
    ]);
  });

  it('outside runOnMachines the engine decides with the generated machines; inside, with the given ones', async () => {
    expect(machinesInUse()).toBe(GENERATED_MACHINE_SET);
    // A spec whose occurrence can no longer be claimed: an engine on it must leave a due slot planned.
    const spec = packageSpec();
    const occurrence = machineOf(spec, 'occurrence.v1');
    occurrence.transitions = occurrence.transitions.filter((t) => t.on !== 'claim');
    const built = buildMachineSet(spec, loadExtensionSpec());
    const statesAfterDueTick = async () => {
      const world = await World.create('memory', {}, new Map(), false);
      try {
        await world.define('alpha', 1, [9]);
        world.clock.set('2026-03-02T09:00:00.000Z');
        await world.tick().catch(() => undefined);
        const live = await world.store.read((r) => r.list('occurrence'));
        return live.map((o) => (o.data as { snapshot: { value: string } }).snapshot.value);
      } finally {
        await world.dispose();
      }
    };
    expect(await statesAfterDueTick()).not.toContain('planned');
    await runOnMachines(built.machines!, async () => {
      expect(machinesInUse()).toBe(built.machines);
      expect(await statesAfterDueTick()).toEqual(['planned']);
    });
    expect(machinesInUse()).toBe(GENERATED_MACHINE_SET);
  });
});

describe('runInvariantSuite on a spec file: built in memory, proven end to end', () => {
  it('a sound edit (a reworded source sentence and guard text) passes every level', { timeout: 240_000 }, async () => {
    const specFile = written('sound', (spec) => {
      spec.source = 'A team copy of the lifecycle page, reworded.';
      const guarded = machineOf(spec, 'run.v1').transitions.find((t) => t.guard !== undefined)!;
      guarded.guard = { ...guarded.guard!, text: `${guarded.guard!.text} (as our team reads it)` };
    });
    const result = await runInvariantSuite({ ...SMALL, spec: { specFile } });
    expect(result.specChecks.flatMap((c) => c.problems)).toEqual([]);
    expect(result.specChecks.at(-1)!.check).toContain(`build in memory from ${specFile}`);
    expect(result.machine.length).toBeGreaterThan(0);
    expect(result.rows.every((r) => r.levels.includes('engine') && r.stepsChecked > 0)).toBe(true);
    expect(result.passed, formatSuite(result)).toBe(true);
  });

  it('a success without evidence fails naming no-evidence-no-success and the shortest path', async () => {
    const specFile = written('success-without-evidence', (spec) =>
      machineOf(spec, 'attempt.v1').transitions.push({
        from: 'dispatching',
        to: 'succeeded',
        on: 'launch_confirmed',
        actor: 'dispatcher',
      }),
    );
    const result = await runInvariantSuite({ ...SMALL, spec: { specFile } });
    expect(result.passed).toBe(false);
    const report = formatSuite(result);
    expect(report).toMatch(/it violates .*no-evidence-no-success/);
    expect(report).toContain(
      'attempt.v1 adopted -dispatch (dispatcher)-> dispatching -launch_confirmed (dispatcher)-> succeeded',
    );
  });

  it('a transition out of a terminal state fails naming terminal-no-regress and the shortest path', async () => {
    const specFile = written('terminal-exit', (spec) =>
      machineOf(spec, 'occurrence.v1').transitions.push({
        from: 'succeeded',
        to: 'running',
        on: 'runtime_started',
        actor: 'dispatcher',
      }),
    );
    const result = await runInvariantSuite({ ...SMALL, spec: { specFile } });
    expect(result.passed).toBe(false);
    const report = formatSuite(result);
    expect(report).toMatch(/it violates .*terminal-no-regress/);
    expect(report).toMatch(/leaves the contract's terminal state 'succeeded': occurrence\.v1 planned .*-> succeeded/);
  });
});
