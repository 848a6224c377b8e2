import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { createEngineMetrics } from '../../src/observability/metrics.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { command } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { eventually } from '../support/eventually.js';
import { parseSamples } from './prometheus-text.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-failure-metrics-'));
// The harness's definition runs in work/notes, under the runtime's root.
mkdirSync(join(dir, 'work', 'notes'), { recursive: true });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FAILED = 'coven_attempts_finished_total{outcome="failed",failure_class="runtime_error"}';

test('a command that exits 3 is a failed runtime_error attempt and a held run until a retry or cancel ends the hold', async () => {
  const runtime = new ChildProcessRuntime({
    runtimeId: 'coven-code',
    command: 'echo boom >&2; exit 3',
    sessionsDir: join(dir, 'sessions'),
    defaultCwd: dir,
  });
  const h = await harness({ runtime, start: '2026-03-02T10:00:00.000Z' });
  const metrics = createEngineMetrics({ engine: h.engine, processMetrics: false });
  const scrape = async () => parseSamples(await metrics.text());
  const failedAttempts = async (n: number) => {
    await eventually(async () => {
      await h.engine.tick();
      return (await h.read.attempts()).filter((a) => a.state === 'failed').length === n ? true : undefined;
    });
  };

  const before = await scrape();
  expect(before.get(FAILED)).toBe(0);
  expect(before.get('coven_runs_held')).toBe(0);
  expect(before.get('coven_oldest_held_run_age_seconds')).toBe(0);

  const ran = await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
  const occurrenceId = String(ran.result!.occurrenceId);
  await failedAttempts(1);
  h.clock.advance({ seconds: 90 });
  const held = await scrape();
  expect(held.get(FAILED)).toBe(1);
  expect(held.get('coven_runs{state="running"}')).toBe(1);
  expect(held.get('coven_runs_held')).toBe(1);
  expect(held.get('coven_oldest_held_run_age_seconds')).toBeGreaterThanOrEqual(90);
  expect(held.get('coven_attempts_finished_total{outcome="succeeded",failure_class="none"}')).toBe(0);

  const [run] = await h.read.runs();
  const runId = String(run!.runId);
  await h.ok(command('attempt.retry.v1', { runId, priorAttemptNumber: 1, priorDisposition: 'failed' }));
  const retried = await scrape();
  expect(retried.get('coven_runs_held')).toBe(0);
  expect(retried.get('coven_oldest_held_run_age_seconds')).toBe(0);

  // The same command fails again: a second failed attempt, held again; the cancel ends the hold for good.
  await failedAttempts(2);
  const again = await scrape();
  expect(again.get(FAILED)).toBe(2);
  expect(again.get('coven_runs_held')).toBe(1);
  await h.ok(command('occurrence.cancel.v1', { occurrenceId }));
  const cancelled = await scrape();
  expect(cancelled.get('coven_runs_held')).toBe(0);
  expect(cancelled.get('coven_runs{state="running"}')).toBe(0);
  expect(cancelled.get(FAILED)).toBe(2);
  metrics.dispose();
});
