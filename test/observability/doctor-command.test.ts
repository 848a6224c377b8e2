import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import type { DoctorReport } from '../../src/observability/doctor.js';
import { command, definitionBody } from '../support/commands.js';
import { runCli } from '../support/run-cli.js';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('doctor without a daemon reads the store itself: no leader for an active automation, exit 1', async () => {
  dir = mkdtempSync(join(tmpdir(), 'coven-doctor-'));
  const file = join(dir, 'automations.json');
  const store = await JsonFileStore.open(file);
  const engine = createEngine({ store, runtimes: [new SimulatedRuntime()] });
  const body = (revision: number, lifecycleState: 'draft' | 'paused') =>
    definitionBody('daily', { revision, lifecycleState, extra: {} });
  await engine.commands.handle(command('definition.create.v1', { definition: body(1, 'draft') }));
  await engine.commands.handle(
    command('definition.revise.v1', { definition: body(2, 'paused') }, { expectedRevision: 1 }),
  );
  await engine.commands.handle(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 2 }));
  await store.close();
  const json = await runCli('--store', file, '--json', 'doctor');
  expect(json.code).toBe(1);
  const report = JSON.parse(json.out) as DoctorReport;
  expect(report.findings.map((f) => f.code)).toEqual(['scheduler.no-leader']);
  const human = await runCli('--store', file, 'doctor');
  expect(human.code).toBe(1);
  expect(human.out).toMatch(/NOT OK/);
  expect(human.out).toMatch(/^ERROR scheduler\.no-leader: /m);
  expect(human.out).toMatch(/next: start the daemon/);
});

test('doctor on a missing store says so and creates nothing', async () => {
  dir = mkdtempSync(join(tmpdir(), 'coven-doctor-'));
  const file = join(dir, 'nothing', 'automations.json');
  const result = await runCli('--store', file, 'doctor');
  expect(result.code).toBe(1);
  expect(result.err).toMatch(/no store at .*never creates one/);
  expect(existsSync(join(dir, 'nothing'))).toBe(false);
});
