import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import type { Observation } from '../../src/runtime/runtime.js';
import { sha256Hex } from '../../src/contract/digest.js';
import { eventually } from '../support/eventually.js';
import { launchRequests } from '../support/launch-request.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const request = launchRequests((n) => `attempt-${n}#1`);
const now = new Date('2026-03-02T09:00:00.000Z');
const exited = (runtime: { observe(id: string, now: Date): Promise<Observation> }, id: string) =>
  eventually(async () => {
    const o = await runtime.observe(id, now);
    return o.status === 'running' ? undefined : o;
  });

describe('ChildProcessRuntime', () => {
  const sessionsDir = join(dir, 'sessions');
  const runtime = (command: string) =>
    new ChildProcessRuntime({ runtimeId: 'sh', command, sessionsDir, defaultCwd: dir });

  test('runs the command with the prompt; exit 0 and the output digest are the evidence', async () => {
    const r = runtime('printf "%s" "$COVEN_PROMPT"');
    const launched = await r.launch(request(), now);
    expect(launched.outcome).toBe('started');
    const observation = await exited(r, (launched as { sessionId: string }).sessionId);
    expect(observation).toEqual({
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
      cancelled: false,
      outputDigest: sha256Hex('say hello'),
    });
  });

  test('a non-zero exit is failure evidence', async () => {
    const r = runtime('exit 3');
    const launched = await r.launch(request(), now);
    expect(await exited(r, (launched as { sessionId: string }).sessionId)).toMatchObject({
      outcome: 'failed',
      exitCode: 3,
      cancelled: false,
    });
  });

  test('cancel stops the process group and the next observation acknowledges it', async () => {
    const r = runtime('sleep 30');
    const launched = (await r.launch(request(), now)) as { sessionId: string };
    expect(await r.observe(launched.sessionId, now)).toMatchObject({ status: 'running' });
    await r.cancel(launched.sessionId, now);
    expect(await exited(r, launched.sessionId)).toMatchObject({ status: 'exited', cancelled: true, exitCode: null });
  });

  test('a missing working directory is a deterministic pre-ownership refusal; nothing is spawned', async () => {
    const r = runtime('true');
    const before = readdirSync(sessionsDir).length;
    expect(await r.launch(request({ cwd: join(dir, 'missing') }), now)).toMatchObject({
      outcome: 'failed',
      failureClass: 'launch_refused',
    });
    expect(readdirSync(sessionsDir).length).toBe(before);
  });

  test('a new runtime instance (an engine restart) re-observes sessions started before it', async () => {
    const first = runtime('printf done');
    const launched = (await first.launch(request(), now)) as { sessionId: string };
    await exited(first, launched.sessionId);
    const afterRestart = runtime('printf done');
    expect(await afterRestart.observe(launched.sessionId, now)).toMatchObject({
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
    });
    expect(await afterRestart.observe('cp-unknown', now)).toMatchObject({ status: 'lost' });
  });
});

describe('FunctionRuntime', () => {
  test('settles with the function outcome and digests its output; a throw is failure; cancel aborts', async () => {
    const runtime = new FunctionRuntime('fn', async (req, signal) => {
      if (req.prompt === 'boom') throw new Error('exploded');
      if (req.prompt === 'wait')
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
      return { outcome: 'succeeded', output: req.prompt.toUpperCase() };
    });
    const ok = (await runtime.launch(request({ prompt: 'hi' }), now)) as { sessionId: string };
    const boom = (await runtime.launch(request({ prompt: 'boom' }), now)) as { sessionId: string };
    const waiting = (await runtime.launch(request({ prompt: 'wait' }), now)) as { sessionId: string };
    await runtime.cancel(waiting.sessionId);
    await runtime.drain();
    expect(await runtime.observe(ok.sessionId)).toEqual({
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
      cancelled: false,
      outputDigest: sha256Hex('HI'),
    });
    expect(await runtime.observe(boom.sessionId)).toMatchObject({ outcome: 'failed', exitCode: 1, detail: 'exploded' });
    expect(await runtime.observe(waiting.sessionId)).toMatchObject({ cancelled: true });
    expect(await new FunctionRuntime('fn', async () => ({ outcome: 'succeeded' })).observe(ok.sessionId)).toMatchObject(
      { status: 'lost' },
    );
  });
  test('a launch is idempotent per key within the process; a key from a dead process is unknown evidence, never a guess', async () => {
    let runs = 0;
    const runtime = new FunctionRuntime('fn', async () => {
      runs += 1;
      return { outcome: 'succeeded' };
    });
    const key = request({ prompt: 'once' });
    const [a, b] = [await runtime.launch(key, now), await runtime.launch(key, now)];
    expect(a).toEqual(b);
    await runtime.drain();
    expect(runs).toBe(1);
    expect(await runtime.launchEvidence(key.sessionKey)).toEqual({
      evidence: 'started',
      sessionId: (a as { sessionId: string }).sessionId,
      cursors: { eventCursor: `${(a as { sessionId: string }).sessionId}:0` },
    });
    expect(
      await new FunctionRuntime('fn', async () => ({ outcome: 'succeeded' })).launchEvidence(key.sessionKey),
    ).toMatchObject({ evidence: 'unknown' });
  });
});

describe('SimulatedRuntime', () => {
  const request = (id: string) => ({
    sessionKey: `key-${id}`,
    automationId: 'a',
    occurrenceId: `occ-${id}`,
    runId: `run-${id}`,
    attemptId: `att-${id}`,
    attemptNumber: 1,
    prompt: 'p',
    deadlineAt: '2026-03-02T10:00:00.000Z',
  });
  const at = (minute: number) => new Date(Date.UTC(2026, 2, 2, 9, minute));

  test('a cancel while the session runs ends it cancelled; a cancel after its natural end leaves the exit as it was', async () => {
    const r = new SimulatedRuntime({ durationMs: 5 * 60_000 });
    const early = (await r.launch(request('early'), at(0))) as { sessionId: string };
    const late = (await r.launch(request('late'), at(0))) as { sessionId: string };
    await r.cancel(early.sessionId, at(2));
    expect(await r.observe(early.sessionId, at(3))).toMatchObject({ status: 'exited', cancelled: true });
    expect(await r.observe(late.sessionId, at(6))).toMatchObject({
      status: 'exited',
      outcome: 'succeeded',
      cancelled: false,
    });
    await r.cancel(late.sessionId, at(7));
    // Every later look reports the same exit: a runtime never rewrites how a session ended.
    expect(await r.observe(late.sessionId, at(8))).toMatchObject({
      status: 'exited',
      outcome: 'succeeded',
      cancelled: false,
    });
  });
});
