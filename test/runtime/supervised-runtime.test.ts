import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { PostgresSessionEvidence } from '../../src/runtime/postgres-session-evidence.js';
import { SupervisedRuntime, type SupervisedRuntimeOptions } from '../../src/runtime/supervised-runtime.js';
import type { Observation } from '../../src/runtime/runtime.js';
import { sessionIdOf } from '../../src/runtime/session-files.js';
import { eventually } from '../support/eventually.js';
import { launchRequests } from '../support/launch-request.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

const opened: PostgresSessionEvidence[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const evidence of opened.splice(0)) await evidence.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coven-supervised-'));
  folders.push(dir);
  return dir;
}

async function runtimeOn(
  url: string,
  cwd: string,
  command: string,
  extra: Partial<SupervisedRuntimeOptions> = {},
): Promise<SupervisedRuntime> {
  const evidence = await PostgresSessionEvidence.open(url);
  opened.push(evidence);
  return new SupervisedRuntime({ runtimeId: 'coven-code', command, evidence, cwdRoots: [cwd], ...extra });
}

const now = () => new Date();
const launchRequest = launchRequests((n) => `supervised-${n}`);
const ended = (runtime: SupervisedRuntime, sessionId: string) =>
  eventually(async () => {
    const observation = await runtime.observe(sessionId);
    return observation.status === 'running' ? undefined : observation;
  }, 30_000);

describePostgres('SupervisedRuntime: session evidence in the store’s database', (socketDir) => {
  test('a session runs under its supervisor; another host’s runtime reads its exit, digest and output', async () => {
    const url = await freshDatabase(socketDir, 'supervised_exit');
    const cwd = folder();
    const command = 'printf "%s|%s|%s\\n" "$COVEN_PROMPT" "$COVEN_SESSION_ID" "$PWD"; env';
    const here = await runtimeOn(url, cwd, command, { host: 'host-a', heartbeatMs: 100 });
    const there = await runtimeOn(url, folder(), 'false', { host: 'host-b' });
    expect(there.evidenceLocation).toMatchObject({ root: here.evidenceLocation.root, anyHost: true });
    const request = launchRequest({ sessionKey: 'key-exit', prompt: 'hello' });
    const started = await here.launch(request, now());
    expect(started).toMatchObject({ outcome: 'started', sessionId: sessionIdOf('key-exit') });
    const sessionId = sessionIdOf('key-exit');
    const observation = (await ended(there, sessionId)) as Extract<Observation, { status: 'exited' }>;
    const output = (await there.sessionOutput(sessionId))!;
    expect(observation).toMatchObject({ status: 'exited', outcome: 'succeeded', exitCode: 0, cancelled: false });
    expect(observation.outputDigest).toBe(createHash('sha256').update(output).digest('hex'));
    expect(output.split('\n')[0]).toBe(`hello|${sessionId}|${cwd}`);
    // The database's address and credentials reach the supervisor on stdin, never the command's environment.
    expect(output).not.toContain(socketDir);
    expect(output).not.toMatch(/^PG[A-Z]+=/m);
  }, 30_000);

  test('a launch racing a fence of the same key: exactly one wins, and the command ran only if the launch did', async () => {
    const url = await freshDatabase(socketDir, 'supervised_race');
    const cwd = folder();
    const ledger = join(cwd, 'ledger');
    const launcher = await runtimeOn(url, cwd, `printf '%s\\n' "$COVEN_SESSION_ID" >> '${ledger}'`, {
      host: 'a',
    });
    const fencer = await runtimeOn(url, folder(), 'false', { host: 'b' });
    // Even keys: the launch and the fence start together; odd keys: the fence comes once the launch answered.
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const request = launchRequest({ sessionKey: `race-${i}` });
        const launching = launcher
          .launch(request, now())
          .catch((error: Error) => ({ outcome: 'unknown', detail: error.message }));
        if (i % 2 === 1) await launching;
        const [launched, evidence] = await Promise.all([launching, fencer.launchEvidence(request.sessionKey, now())]);
        return { sessionId: sessionIdOf(request.sessionKey), launched: launched.outcome, evidence: evidence.evidence };
      }),
    );
    for (const o of outcomes) {
      expect([o.launched, o.evidence]).toContainEqual(o.launched === 'started' ? 'started' : 'never_started');
      expect(o.launched === 'started').toBe(o.evidence === 'started');
    }
    const started = outcomes.filter((o) => o.launched === 'started').map((o) => o.sessionId);
    await eventually(async () =>
      started.every((id) => existsSync(ledger) && readFileSync(ledger, 'utf8').includes(id)) ? true : undefined,
    );
    for (const o of outcomes.filter((x) => x.launched !== 'started'))
      expect(await fencer.observe(o.sessionId)).toMatchObject({ status: 'lost' });
    expect(started.length).toBeGreaterThanOrEqual(4);
    const lines = existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n').filter(Boolean) : [];
    expect(lines.sort()).toEqual([...started].sort());
  }, 60_000);

  test('a session whose supervisor died (heartbeat stale by the database clock) reads lost', async () => {
    const url = await freshDatabase(socketDir, 'supervised_stale');
    const runtime = await runtimeOn(url, folder(), 'sleep 3', { heartbeatMs: 100, staleAfterMs: 1_000 });
    const started = await runtime.launch(launchRequest({ sessionKey: 'key-stale' }), now());
    expect(started.outcome).toBe('started');
    const sessionId = sessionIdOf('key-stale');
    expect(await runtime.observe(sessionId)).toMatchObject({ status: 'running' });
    const evidence = opened[0]!;
    const row = (await evidence.read(sessionId))!;
    process.kill(row.pid!, 'SIGKILL');
    const observation = await eventually(async () => {
      const o = await runtime.observe(sessionId);
      return o.status === 'lost' ? o : undefined;
    }, 20_000);
    expect(observation).toMatchObject({ status: 'lost', detail: expect.stringContaining('last heartbeat') });
  }, 30_000);

  test('a cancel request recorded by another engine stops the session at its next heartbeat', async () => {
    const url = await freshDatabase(socketDir, 'supervised_cancel');
    const runtime = await runtimeOn(url, folder(), 'sleep 30', { heartbeatMs: 100 });
    const other = await runtimeOn(url, folder(), 'false', { host: 'elsewhere' });
    await runtime.launch(launchRequest({ sessionKey: 'key-cancel' }), now());
    const sessionId = sessionIdOf('key-cancel');
    await other.cancel(sessionId, now());
    expect(await ended(other, sessionId)).toMatchObject({ status: 'exited', outcome: 'failed', cancelled: true });
  }, 30_000);

  test("retention drops an ended session's output and keeps its row; a running session keeps its output", async () => {
    const url = await freshDatabase(socketDir, 'supervised_expire');
    const runtime = await runtimeOn(url, folder(), 'echo kept until retention', { heartbeatMs: 100 });
    await runtime.launch(launchRequest({ sessionKey: 'key-expire' }), now());
    const sessionId = sessionIdOf('key-expire');
    await ended(runtime, sessionId);
    expect(await runtime.sessionOutput(sessionId)).toBe('kept until retention\n');
    expect(await runtime.expireSession(sessionId)).toBe(true);
    expect(await runtime.sessionOutput(sessionId)).toBeUndefined();
    // The claim stays: the key still reads as started, so nothing can launch it again.
    expect(await runtime.launchEvidence('key-expire', now())).toMatchObject({ evidence: 'started', sessionId });
    expect(await runtime.observe(sessionId)).toMatchObject({ status: 'exited', exitCode: 0 });

    const sleeper = await runtimeOn(url, folder(), 'sleep 30', { heartbeatMs: 100 });
    await sleeper.launch(launchRequest({ sessionKey: 'key-expire-live' }), now());
    const live = sessionIdOf('key-expire-live');
    expect(await sleeper.expireSession(live)).toBe(false);
    await sleeper.cancel(live, now());
    await ended(sleeper, live);
    expect(await sleeper.expireSession(live)).toBe(true);
  }, 30_000);
});
