import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { DaemonClient } from '../../src/daemon/index.js';
import { eventually } from '../support/eventually.js';
import { killChildren, runCliProcess, spawnCli, startDaemonProcess, writeDefinition } from './daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-daemon-cli-'));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fresh = () => mkdtempSync(join(dir, 'store-'));

describe('a second CLI process against a running daemon', () => {
  test('reads and commands go over the socket, never CONCURRENCY_LIMIT, and print what they print locally', async () => {
    const folder = fresh();
    const store = join(folder, 'automations.json');
    const daemon = await startDaemonProcess(store);
    const cli = (...args: string[]) => runCliProcess(['--store', store, ...args]);
    const applied = await cli('apply', '-f', writeDefinition(folder, 'nightly'));
    expect(applied, applied.stderr).toMatchObject({
      code: 0,
      stdout: 'definition.revise.v1: committed (revision 2)\n',
    });
    expect((await cli('activate', 'nightly')).stdout).toBe('nightly: active (revision 3)\n');
    const listed = await cli('list');
    expect(listed.stdout).toMatch(/nightly\s+Job nightly\s+active\s+3/);
    const runNow = await cli('run-now', 'nightly');
    expect(runNow, runNow.stderr).toMatchObject({ code: 0 });
    const history = await cli('--json', 'history', 'nightly');
    expect(JSON.parse(history.stdout)).toMatchObject({ outcome: 'committed', result: { automationId: 'nightly' } });
    const events = await cli('events', '--stream', 'automation/nightly');
    expect(events.stdout).toContain('definition.activated');
    const refused = await cli('pause', 'no-such-automation');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^NOT_FOUND \(404\)/);
    // retry reads the run's latest attempt through the daemon's read route before it sends attempt.retry.v1.
    const retry = await cli('retry', 'no-such-run');
    expect(retry.code).toBe(1);
    for (const run of [applied, listed, runNow, history, events, refused, retry])
      expect(run.stdout + run.stderr).not.toContain('CONCURRENCY_LIMIT');
    const get = await cli('get', 'nightly');
    // list shows the last run's result: compared once the daemon's passes have settled the run-now.
    const settled = await eventually(async () => {
      const run = await cli('list');
      return /\bsucceeded\s*$/m.test(run.stdout) ? run : undefined;
    }, 30_000);
    // The same commands once the daemon is gone: the CLI opens the store itself and prints the same.
    daemon.child.kill('SIGINT');
    expect(await daemon.exited).toBe(0);
    expect(daemon.stdout()).toMatch(/stopped; store lock released\n$/);
    expect(existsSync(`${store}.sock`) || existsSync(`${store}.daemon.json`)).toBe(false);
    expect((await cli('list')).stdout).toBe(settled.stdout);
    expect((await cli('get', 'nightly')).stdout).toBe(get.stdout);
    const localRefusal = await cli('pause', 'no-such-automation');
    expect(localRefusal.stderr).toBe(refused.stderr);
    expect((await cli('retry', 'no-such-run')).stderr).toBe(retry.stderr);
  }, 120_000);

  test('occurrences, occurrence, receipt, next, list and cancel print the same through the daemon as locally', async () => {
    const folder = fresh();
    const store = join(folder, 'automations.json');
    const daemon = await startDaemonProcess(store);
    const cli = (...args: string[]) => runCliProcess(['--store', store, ...args]);
    expect((await cli('apply', '-f', writeDefinition(folder, 'nightly'))).code).toBe(0);
    expect((await cli('activate', 'nightly')).code).toBe(0);
    expect((await cli('run-now', 'nightly')).code).toBe(0);
    // The daemon's own passes observe the session (`true`) and settle it.
    const id = await eventually(async () => {
      const listed = JSON.parse((await cli('--json', 'occurrences', '--view', 'all')).stdout) as {
        result: { occurrences: Array<{ occurrenceId: string; state: string }> };
      };
      const settled = listed.result.occurrences.find((o) => o.state === OccurrenceState.succeeded);
      return settled?.occurrenceId;
    }, 30_000);
    const reads = [
      ['list'],
      ['occurrences'],
      ['occurrences', '--view', 'running', '--automation', 'nightly'],
      ['occurrence', id],
      ['occurrence', id, '--history'],
      ['receipt', `run-${id}`],
      ['receipt', `run-${id}`, '--verify'],
      ['cancel', id],
      ['occurrence', 'occ-ghost'],
    ];
    const served = [];
    for (const args of reads) served.push(await cli(...args));
    const next = await cli('next', 'nightly', '--count', '3');
    for (const run of [...served, next]) expect(run.stdout + run.stderr).not.toContain('CONCURRENCY_LIMIT');
    expect(served[6]!.stdout).toMatch(/: verified \(sha256 over jcs-rfc8785: [0-9a-f]{64}\)\n$/);
    expect(served[7]).toMatchObject({ code: 1, stderr: expect.stringMatching(/^ILLEGAL_TRANSITION \(422\)/) });
    daemon.child.kill('SIGINT');
    expect(await daemon.exited).toBe(0);
    for (const [i, args] of reads.entries()) {
      const local = await cli(...args);
      expect({ code: local.code, stdout: local.stdout, stderr: local.stderr }, args.join(' ')).toEqual(served[i]);
    }
    // The preview's header names the instant it starts from; the slots are the same.
    const localNext = await cli('next', 'nightly', '--count', '3');
    expect(localNext.stdout.split('\n').slice(1)).toEqual(next.stdout.split('\n').slice(1));
  }, 120_000);

  test("events --follow streams another process's commits live, with the feed position --after takes", async () => {
    const folder = fresh();
    const store = join(folder, 'automations.json');
    await startDaemonProcess(store);
    await runCliProcess(['--store', store, 'apply', '-f', writeDefinition(folder, 'first')]);
    const follower = spawnCli(['--store', store, 'events', '--follow']);
    await follower.waitFor(/^\s*1 \S+Z automation\/first definition\.revised:/m);
    const applied = await runCliProcess(['--store', store, 'apply', '-f', writeDefinition(folder, 'second')]);
    expect(applied.code, applied.stderr).toBe(0);
    const [line] = await follower.waitFor(/^\s*(\d+) \S+Z automation\/second definition\.revised:.*$/m);
    const position = Number(line.trim().split(' ')[0]);
    follower.child.kill('SIGINT');
    expect(await follower.exited).toBe(0);
    // --after takes that position: the next follower starts right after it.
    const after = spawnCli(['--store', store, '--json', 'events', '--follow', '--after', String(position - 1)]);
    const [json] = await after.waitFor(/^\{.*\}$/m);
    expect(JSON.parse(json)).toMatchObject({ position, event: { kind: 'definition.revised', automationId: 'second' } });
  }, 120_000);

  test('a killed daemon leaves a socket and daemon.json that block neither the CLI nor the next start', async () => {
    const folder = fresh();
    const store = join(folder, 'automations.json');
    const killed = await startDaemonProcess(store);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(statSync(`${store}.sock`).isSocket()).toBe(true);
    expect(await DaemonClient.connect(store)).toBeUndefined();
    const listed = await runCliProcess(['--store', store, 'list']);
    expect(listed, listed.stderr).toMatchObject({ code: 0 });
    const next = await startDaemonProcess(store);
    expect(await DaemonClient.connect(store)).toBeInstanceOf(DaemonClient);
    const second = await runCliProcess(['--store', store, 'start']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/^a daemon \(process \d+\) already serves /);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  }, 120_000);

  test('--listen refuses any non-loopback host with one line, before touching the store', async () => {
    const store = join(fresh(), 'automations.json');
    for (const listen of ['0.0.0.0:8790', '192.168.1.2:8790', 'localhost:8790', '8790']) {
      const run = await runCliProcess(['--store', store, 'start', '--listen', listen]);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/^--listen: .* is not a loopback address/);
    }
    expect(existsSync(store)).toBe(false);
  }, 60_000);
});
