import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { command } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { eventually } from '../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-failures-'));
// The harness's definition runs in work/notes, under the runtime's root.
mkdirSync(join(dir, 'work', 'notes'), { recursive: true });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Rendered = Record<string, unknown>;

/** Runs `daily` now and passes until its first attempt has settled; answers the engine and the occurrence id. */
async function failedRun(runtime: Runtime) {
  const h = await harness({ runtime });
  const ran = await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
  const occurrenceId = String(ran.result!.occurrenceId);
  await eventually(async () => {
    await h.engine.tick();
    const attempts = await h.read.attempts();
    return attempts.some((a) => a.state === 'failed') ? true : undefined;
  });
  return { h, occurrenceId };
}

async function read(h: Awaited<ReturnType<typeof harness>>, name: string, payload: Rendered) {
  const response = await h.engine.commands.handle(command(name, payload));
  expect(response.outcome, JSON.stringify(response.error)).toBe('committed');
  return response.result!;
}

describe('a failed attempt reads as failed in every read command', () => {
  test("an in-process function's thrown message, with the hold and the commands that end it", async () => {
    const runtime = new FunctionRuntime('coven-code', async () => {
      throw new Error('database unreachable');
    });
    const { h, occurrenceId } = await failedRun(runtime);
    const detail = await read(h, 'occurrence.get.v1', { occurrenceId });
    const run = (detail.runs as Rendered[])[0]!;
    // The contract keeps a held run `running`; the reads say what happened beside it.
    expect(run.state).toBe('running');
    expect(run.failure).toMatchObject({
      failureClass: 'runtime_error',
      exitCode: 1,
      errorMessage: 'database unreachable',
      attemptNumber: 1,
    });
    expect(run.hold).toEqual({
      heldSince: expect.any(String),
      until: run.deadlineAt,
      actions: {
        retry: `coven-automata retry ${String(run.runId)}`,
        cancel: `coven-automata cancel ${occurrenceId}`,
      },
    });
    expect((run.attempts as Rendered[])[0]!.failure).toMatchObject({ errorMessage: 'database unreachable' });
    const history = await read(h, 'run.history.v1', { automationId: 'daily' });
    expect((history.runs as Rendered[])[0]).toMatchObject({
      failure: { errorMessage: 'database unreachable' },
      hold: { until: run.deadlineAt },
    });
    const one = await read(h, 'run.get.v1', { runId: String(run.runId) });
    expect(one.run).toMatchObject({ failure: { errorMessage: 'database unreachable' } });
  });

  test('a command that prints boom to stderr and exits 3: its exit code and the tail of its output', async () => {
    const runtime = new ChildProcessRuntime({
      runtimeId: 'coven-code',
      command: 'echo starting; echo boom >&2; exit 3',
      sessionsDir: join(dir, 'sessions'),
      defaultCwd: dir,
    });
    const { h, occurrenceId } = await failedRun(runtime);
    const detail = await read(h, 'occurrence.get.v1', { occurrenceId });
    const run = (detail.runs as Rendered[])[0]!;
    expect(run.failure).toMatchObject({ failureClass: 'runtime_error', exitCode: 3, outputTail: 'starting\nboom\n' });
    expect(run.failure).not.toHaveProperty('signal');
    expect(run.hold).toMatchObject({ until: run.deadlineAt });
  });

  test('a session killed by a signal names it; a long output keeps only its tail', async () => {
    const runtime = new ChildProcessRuntime({
      runtimeId: 'coven-code',
      command: 'i=0; while [ $i -lt 400 ]; do echo "line $i of the output"; i=$((i+1)); done; sh -c \'kill -9 $$\'',
      sessionsDir: join(dir, 'sessions-kill'),
      defaultCwd: dir,
    });
    const { h, occurrenceId } = await failedRun(runtime);
    const detail = await read(h, 'occurrence.get.v1', { occurrenceId });
    const failure = (detail.runs as Rendered[])[0]!.failure as Rendered;
    expect(failure).toMatchObject({ exitCode: 137, signal: 'SIGKILL', outputTruncated: true });
    expect(Buffer.byteLength(String(failure.outputTail))).toBeLessThanOrEqual(2048);
    // The shell may report the kill on stderr after the last line (dash prints `Killed`).
    expect(String(failure.outputTail).slice(-80)).toContain('line 399 of the output\n');
  });
});
