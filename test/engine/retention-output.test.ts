import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { EVIDENCE_ROOT_FILE } from '../../src/runtime/session-files.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { outputExpiryKind } from '../../src/retention/output-expiry.js';
import { command } from '../support/commands.js';
import { harness } from '../support/engine-harness.js';
import { eventually } from '../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-retention-output-'));
// The harness's definition runs in work/notes, under the runtime's root.
mkdirSync(join(dir, 'work', 'notes'), { recursive: true });
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let worlds = 0;

/** The session files a sessions folder holds (its evidence-root id file is the folder's, not a session's). */
const sessionFiles = (sessions: string) => readdirSync(sessions).filter((name) => name !== EVIDENCE_ROOT_FILE);

/** A run of `echo hello` settled on an engine whose occurrence history is `ephemeral` (kept a day). */
async function settledRun() {
  const sessions = join(dir, `sessions-${++worlds}`);
  const runtime = new ChildProcessRuntime({
    runtimeId: 'coven-code',
    command: 'echo hello from the session',
    sessionsDir: sessions,
    defaultCwd: dir,
  });
  const h = await harness({
    runtime,
    start: '2026-03-02T10:00:00.000Z',
    // Fridays only: no slot comes due while the test moves the clock a day on (to Tuesday), so the one session is ours.
    rrule: 'FREQ=WEEKLY;BYDAY=FR;BYHOUR=9',
    retentionClasses: { occurrenceHistory: { classification: 'ephemeral' } },
  });
  const ran = await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
  const occurrenceId = String(ran.result!.occurrenceId);
  await eventually(async () => {
    await h.engine.tick();
    return (await h.read.occurrences()).some((o) => o.state === 'succeeded') ? true : undefined;
  });
  const output = () => h.engine.commands.handle(command('x-coven-automata.run.output.v1', { occurrenceId }));
  const expiring = () => h.store.read((r) => r.list(outputExpiryKind('coven-code')));
  return { h, runtime, sessions, occurrenceId, output, expiring };
}

test('retention removes the session files of a compacted run; its output then reads "expired by retention"', async () => {
  const { h, sessions, occurrenceId, output, expiring } = await settledRun();
  expect((await output()).result).toMatchObject({ output: 'hello from the session\n', complete: true });
  expect(sessionFiles(sessions).map((name) => name.replace(/^cp-[0-9a-f]+/, 'cp'))).toEqual(
    expect.arrayContaining(['cp.log', 'cp.exit', 'cp.start']),
  );

  h.clock.advance({ days: 1, minutes: 10 });
  const report = await h.engine.tick();
  expect(report.errors).toEqual([]);
  expect(report.compacted).toBe(1);
  expect(sessionFiles(sessions)).toEqual([]);
  expect(await expiring()).toEqual([]);
  const expired = await output();
  expect(expired).toMatchObject({
    outcome: 'rejected',
    error: { code: 'NOT_FOUND', httpStatus: 404, details: { outputExpired: true } },
  });
  expect(expired.error!.message).toContain(`the output of occurrence ${occurrenceId} expired by retention`);
});

test('a crash after the compaction committed leaves the files and their entry; the next sweep removes them', async () => {
  const { h, runtime, sessions, expiring } = await settledRun();
  const expire = runtime.expireSession.bind(runtime);
  let crashes = 1;
  // The process dies between the compaction's commit and the files' removal: the removal never happens.
  runtime.expireSession = async (sessionId) => {
    if (crashes-- > 0) throw new Error('engine process killed');
    return expire(sessionId);
  };
  h.clock.advance({ days: 1, minutes: 10 });
  const crashed = await h.engine.tick();
  expect(crashed.compacted).toBe(1);
  expect(crashed.errors.map((e) => e.message)).toEqual([expect.stringContaining('engine process killed')]);
  expect(sessionFiles(sessions).length).toBeGreaterThan(0);
  expect(await expiring()).toHaveLength(1);

  // The next sweep (retention's default: every 5 minutes) finds the entry and finishes the removal.
  h.clock.advance({ minutes: 6 });
  const next = await h.engine.tick();
  expect(next.errors).toEqual([]);
  expect(sessionFiles(sessions)).toEqual([]);
  expect(await expiring()).toEqual([]);
});

test('a session whose process still runs keeps its files until it ends; a fence is never removed', async () => {
  const { h, runtime, sessions } = await settledRun();
  const [start] = sessionFiles(sessions).filter((name) => name.endsWith('.start'));
  const sessionId = start!.slice(0, -'.start'.length);
  // A claimant that is alive (this very test process stands in for a command that ignored its cancel).
  writeFileSync(join(sessions, start!), `started pid=${process.pid} starttime=\n`);
  expect(await runtime.expireSession(sessionId)).toBe(false);
  expect(sessionFiles(sessions)).toContain(`${sessionId}.log`);
  writeFileSync(join(sessions, start!), `started pid=999999999 starttime=\n`);
  expect(await runtime.expireSession(sessionId)).toBe(true);
  expect(sessionFiles(sessions)).toEqual([]);
  // A session fenced before it started: its fence is what keeps a late wrapper from ever running it.
  writeFileSync(join(sessions, start!), 'fenced never_started at=2026-03-02T10:00:00.000Z\n');
  expect(await runtime.expireSession(sessionId)).toBe(true);
  expect(sessionFiles(sessions)).toEqual([start]);
  await h.engine.stop();
});
