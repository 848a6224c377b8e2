import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, test } from 'vitest';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import type { LaunchEvidence, Observation } from '../../src/runtime/runtime.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { sessionIdOf } from '../../src/runtime/session-files.js';
import { eventually } from '../support/eventually.js';
import { launchRequests } from '../support/launch-request.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coven-evidence-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const now = new Date('2026-03-02T09:00:00.000Z');
const request = launchRequests((n) => `evidence-${n}`);
/** A runtime over its own folder; a second one on the same folder is an engine restarted after a crash. */
function runtimeIn(root: string, command: string): ChildProcessRuntime {
  return new ChildProcessRuntime({ runtimeId: 'sh', command, sessionsDir: join(root, 'sessions'), cwdRoots: [root] });
}
let roots = 0;
const freshRoot = (name: string) => {
  const root = join(dir, `${name}-${++roots}`);
  mkdirSync(root, { recursive: true });
  return root;
};
const finished = (runtime: ChildProcessRuntime, id: string) =>
  eventually(async () => {
    const o: Observation = await runtime.observe(id, now);
    return o.status === 'running' ? undefined : o;
  });
/** Field 22 of /proc/<pid>/stat: the process start time, in clock ticks since boot. */
const startTimeOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
};
const claim = (sessionsDir: string, sessionId: string, pid: number, startTime: string) =>
  writeFileSync(join(sessionsDir, `${sessionId}.start`), `started pid=${pid} starttime=${startTime}\n`);

describe('one key, one session, whatever races it', () => {
  test('launchEvidence in another process racing a wrapper never yields both never_started and a command that ran (50 rounds)', async () => {
    const root = freshRoot('race');
    const racer = spawn(
      process.execPath,
      ['--import', 'tsx', join(packageRoot(), 'test/runtime/fixtures/fence-racer.ts'), root],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const answers = createInterface({ input: racer.stdout })[Symbol.asyncIterator]();
    const next = async () => (await answers.next()).value as string;
    const tally = { started: 0, never_started: 0 };
    try {
      expect(await next()).toBe('ready');
      const launcher = runtimeIn(root, ': > ran');
      for (let round = 0; round < 50; round += 1) {
        const cwd = join(root, `round-${round}`);
        mkdirSync(cwd);
        const key = `race-${round}`;
        // The fence lands anywhere from before the spawn to after the claim (a spawn takes milliseconds here).
        racer.stdin.write(`${key} ${(round % 10) * 1500}\n`);
        const launched = await launcher.launch(request({ sessionKey: key, cwd }), now);
        const evidence = JSON.parse(await next()) as LaunchEvidence;
        if (evidence.evidence === 'never_started') {
          expect(launched, `round ${round}`).toMatchObject({ outcome: 'failed', failureClass: 'launch_refused' });
          // The launch answers only once its wrapper has decided the claim, so a lost claim is final here.
          expect(existsSync(join(cwd, 'ran')), `round ${round}`).toBe(false);
        } else {
          expect(evidence, `round ${round}`).toMatchObject({ evidence: 'started', sessionId: sessionIdOf(key) });
          expect(launched, `round ${round}`).toMatchObject({ outcome: 'started', sessionId: sessionIdOf(key) });
          expect(await finished(launcher, sessionIdOf(key))).toMatchObject({ status: 'exited', exitCode: 0 });
          expect(existsSync(join(cwd, 'ran')), `round ${round}`).toBe(true);
        }
        tally[evidence.evidence as 'started' | 'never_started'] += 1;
      }
    } finally {
      racer.kill();
    }
    console.info(`launchEvidence vs wrapper, 50 rounds: ${JSON.stringify(tally)}`);
    expect(tally.started + tally.never_started).toBe(50);
  }, 60_000);

  test('never_started is permanent: a later launch with that key, on any instance, runs nothing', async () => {
    const root = freshRoot('fenced');
    const key = 'fenced-key';
    expect(await runtimeIn(root, ': > ran').launchEvidence(key, now)).toMatchObject({ evidence: 'never_started' });
    expect(await runtimeIn(root, ': > ran').launchEvidence(key, now)).toMatchObject({ evidence: 'never_started' });
    const later = runtimeIn(root, ': > ran');
    expect(await later.launch(request({ sessionKey: key }), now)).toMatchObject({
      outcome: 'failed',
      failureClass: 'launch_refused',
    });
    expect(later.launches).toEqual([]);
    expect(existsSync(join(root, 'ran'))).toBe(false);
    expect(await later.observe(sessionIdOf(key), now)).toMatchObject({ status: 'lost' });
  });

  test('a second launch with the same key, concurrent or after a restart, never starts a second process', async () => {
    const root = freshRoot('idempotent');
    const first = runtimeIn(root, 'echo once >> count');
    const key = 'same-key';
    const [a, b] = await Promise.all([
      first.launch(request({ sessionKey: key }), now),
      first.launch(request({ sessionKey: key }), now),
    ]);
    expect(a).toEqual(b);
    await finished(first, sessionIdOf(key));
    const restarted = runtimeIn(root, 'echo once >> count');
    expect(await restarted.launch(request({ sessionKey: key }), now)).toMatchObject({
      outcome: 'started',
      sessionId: sessionIdOf(key),
    });
    expect(restarted.launches).toEqual([]);
    expect(first.launches).toHaveLength(1);
    expect(readFileSync(join(root, 'count'), 'utf8')).toBe('once\n');
  });
});

describe('evidence outlives the engine that launched', () => {
  test('killed mid-launch: a start claim with no exit is running to a new instance, then exited from its exit file', async () => {
    const root = freshRoot('restart');
    execFileSync('mkfifo', [join(root, 'gate')]);
    const key = 'restart-key';
    const dead = runtimeIn(root, 'read line < gate; printf "%s" "$line"');
    expect(await dead.launch(request({ sessionKey: key }), now)).toMatchObject({ outcome: 'started' });
    const restarted = runtimeIn(root, 'unused');
    expect(await restarted.launchEvidence(key, now)).toEqual({
      evidence: 'started',
      sessionId: sessionIdOf(key),
      cursors: { logCursor: '0' },
    });
    expect(await restarted.observe(sessionIdOf(key), now)).toMatchObject({ status: 'running' });
    const gate = openSync(join(root, 'gate'), 'w');
    writeSync(gate, 'released\n');
    closeSync(gate);
    expect(await finished(restarted, sessionIdOf(key))).toMatchObject({
      status: 'exited',
      outcome: 'succeeded',
      exitCode: 0,
      cancelled: false,
    });
    expect(readFileSync(join(root, 'sessions', `${sessionIdOf(key)}.log`), 'utf8')).toBe('released');
  });

  test('killed after the launch record but before any wrapper claimed: never_started; unreadable evidence: unknown', async () => {
    const root = freshRoot('unclaimed');
    const runtime = runtimeIn(root, 'true');
    writeFileSync(
      join(root, 'sessions', `${sessionIdOf('unclaimed')}.json`),
      JSON.stringify({ sessionKey: 'unclaimed' }),
    );
    expect(await runtime.launchEvidence('unclaimed', now)).toMatchObject({ evidence: 'never_started' });
    writeFileSync(join(root, 'sessions', `${sessionIdOf('garbled')}.start`), 'started pid=banana\n');
    expect(await runtime.launchEvidence('garbled', now)).toMatchObject({
      evidence: 'unknown',
      detail: expect.stringContaining('neither a start claim nor a fence'),
    });
    await expect(runtime.launch(request({ sessionKey: 'garbled' }), now)).rejects.toThrow(
      /neither a start claim nor a fence/,
    );
  });

  test('a zombie claimant is not running: lost without an exit file, exited with one', async () => {
    const root = freshRoot('zombie');
    const runtime = runtimeIn(root, 'true');
    // The background child exits once its parent has exec'd into sleep, which never reaps it: a zombie until the
    // sleep ends. (Exiting before the exec would let the shell reap it first.)
    const script = 'p=$$; (until [ "$(cat /proc/$p/comm)" = sleep ]; do :; done) & echo $!; exec sleep 30';
    const holder = spawn('/bin/sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number(
        await new Promise<string>((resolve) => holder.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()))),
      );
      await eventually(async () => (stateOf(zombie) === 'Z' ? true : undefined));
      const sessionsDir = join(root, 'sessions');
      claim(sessionsDir, 'cp-zombie', zombie, startTimeOf(zombie));
      expect(await runtime.observe('cp-zombie', now)).toMatchObject({
        status: 'lost',
        detail: expect.stringContaining('zombie'),
      });
      claim(sessionsDir, 'cp-holder', holder.pid!, startTimeOf(holder.pid!));
      expect(await runtime.observe('cp-holder', now)).toMatchObject({ status: 'running' });
      writeFileSync(join(sessionsDir, 'cp-zombie.exit'), '4');
      expect(await runtime.observe('cp-zombie', now)).toMatchObject({
        status: 'exited',
        outcome: 'failed',
        exitCode: 4,
      });
    } finally {
      holder.kill('SIGKILL');
    }
  });

  test('a reused pid is not the session: its start time differs; cancel leaves that process alone', async () => {
    const root = freshRoot('reused');
    const runtime = runtimeIn(root, 'true');
    const sessionsDir = join(root, 'sessions');
    const real = startTimeOf(process.pid);
    claim(sessionsDir, 'cp-reused', process.pid, String(Number(real) + 1));
    expect(await runtime.observe('cp-reused', now)).toMatchObject({ status: 'lost' });
    claim(sessionsDir, 'cp-self', process.pid, real);
    expect(await runtime.observe('cp-self', now)).toMatchObject({ status: 'running' });
    const bystander = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      await new Promise((resolve) => bystander.once('spawn', resolve));
      claim(sessionsDir, 'cp-bystander', bystander.pid!, String(Number(startTimeOf(bystander.pid!)) + 1));
      await runtime.cancel('cp-bystander', now);
      expect(stateOf(bystander.pid!)).not.toBe('Z');
      expect(await runtime.observe('cp-bystander', now)).toMatchObject({
        status: 'exited',
        cancelled: true,
        exitCode: null,
      });
      writeFileSync(join(sessionsDir, 'cp-reused.exit'), '0');
      expect(await runtime.observe('cp-reused', now)).toMatchObject({ status: 'exited', outcome: 'succeeded' });
    } finally {
      bystander.kill('SIGKILL');
    }
  });
});

describe('session files are private', () => {
  test.each([0o022, 0o000])(
    'under umask %o: every session file 0600, the folder 0700; the command keeps the umask',
    async (mask) => {
      const previous = process.umask(mask);
      try {
        const root = freshRoot('modes');
        const runtime = runtimeIn(root, 'umask; : > made-by-command');
        const done = (await runtime.launch(request(), now)) as { sessionId: string };
        await finished(runtime, done.sessionId);
        const waiting = (await runtime.launch(request({ sessionKey: 'cancelled' }), now)) as { sessionId: string };
        await runtime.cancel(waiting.sessionId, now);
        await runtime.launchEvidence('fenced', now);
        const sessionsDir = join(root, 'sessions');
        expect(statSync(sessionsDir).mode & 0o777).toBe(0o700);
        const files = readdirSync(sessionsDir);
        expect(files.filter((f) => f.startsWith(done.sessionId)).sort()).toEqual(
          ['json', 'log', 'exit', 'start'].map((e) => `${done.sessionId}.${e}`).sort(),
        );
        expect(files).toContain(`${waiting.sessionId}.cancel`);
        expect(files).toContain(`${sessionIdOf('fenced')}.start`);
        for (const file of files)
          expect(`${file} ${(statSync(join(sessionsDir, file)).mode & 0o777).toString(8)}`).toBe(`${file} 600`);
        expect(readFileSync(join(sessionsDir, `${done.sessionId}.log`), 'utf8').trim()).toBe(
          mask.toString(8).padStart(4, '0'),
        );
        expect(statSync(join(root, 'made-by-command')).mode & 0o777).toBe(0o666 & ~mask);
      } finally {
        process.umask(previous);
      }
    },
  );
});

describe('session-exit cues', () => {
  test('a session is cued once its wrapper exited, and observe then reports the recorded exit', async () => {
    const root = freshRoot('cues');
    const runtime = runtimeIn(root, 'sleep 0.2; exit 3');
    const cues: Array<{ sessionId: string; attemptId: string; observed: Observation }> = [];
    let heard!: () => void;
    const cued = new Promise<void>((resolve) => (heard = resolve));
    const unsubscribe = runtime.onSessionExit((exit) => {
      void runtime.observe(exit.sessionId, now).then((observed) => {
        cues.push({ ...exit, observed });
        heard();
      });
    });
    const launch = request();
    const started = (await runtime.launch(launch, now)) as { sessionId: string };
    expect(cues).toEqual([]);
    await cued;
    unsubscribe();
    expect(cues).toEqual([
      {
        sessionId: started.sessionId,
        attemptId: launch.attemptId,
        observed: expect.objectContaining({ status: 'exited', outcome: 'failed', exitCode: 3 }),
      },
    ]);
  });
});
