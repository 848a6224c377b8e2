import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { eventually } from '../support/eventually.js';
import { killChildren, runCliProcess, spawnCli } from '../daemon/daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-failures-'));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * As a new user would: the README's example definition (retries on, so a failed run is held for an operator
 * retry), a daemon whose command prints `boom` to stderr and exits 3, then every reader.
 */
describe('a command that prints boom to stderr and exits 3, as every CLI surface shows it', () => {
  test('list, history, occurrence, logs, doctor and the HTTP output route say failed, why, and what to do', async () => {
    const folder = mkdtempSync(join(dir, 'store-'));
    const store = join(folder, 'automations.json');
    const definition = join(folder, 'daily-notes.json');
    copyFileSync(resolve(packageRoot(), 'examples', 'daily-notes.json'), definition);
    const cli = (...args: string[]) => runCliProcess(['--store', store, ...args], folder);
    expect((await cli('apply', '-f', definition)).code).toBe(0);
    expect((await cli('activate', 'daily-notes')).code).toBe(0);
    const command = 'echo starting; echo boom >&2; exit 3';
    const daemon = spawnCli(['--store', store, '--command', command, 'start', '--listen', '127.0.0.1:0'], folder);
    const url = (await daemon.waitFor(/^dashboard: (http:\/\/127\.0\.0\.1:\d+)\/\?token=.*$/m))[1]!;
    const token = readFileSync(`${store}.token`, 'utf8').trim();
    const authorized = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    expect((await cli('run-now', 'daily-notes')).code).toBe(0);
    // Waits over HTTP (a CLI process per poll is slow on a loaded machine) until the run is held.
    await eventually(async () => {
      const answer = await fetch(`${url}/api/v1/actions`, {
        method: 'POST',
        headers: authorized,
        body: JSON.stringify({
          schemaVersion: 'coven.automations.v1',
          command: 'run.history.v1',
          adoptionKey: `poll-${Date.now()}`,
          origin: { principal: { principalId: 'principal:test' }, channel: 'http' },
          intent: { statement: 'wait for the run' },
          payload: { automationId: 'daily-notes', limit: 1 },
        }),
      });
      const runs = ((await answer.json()) as { result?: { runs: Array<{ hold?: unknown }> } }).result?.runs ?? [];
      return runs[0]?.hold === undefined ? undefined : true;
    }, 60_000);
    const listed = await cli('list');
    expect(listed.stdout).toMatch(/failed, held for retry until \S+Z \(runtime_error, exit 3\)/);

    const history = await cli('history', 'daily-notes');
    expect(history.stdout).toMatch(/attempt 1 failed: runtime_error, exit 3: boom/);
    const occurrences = JSON.parse((await cli('--json', 'occurrences')).stdout) as {
      result: { occurrences: Array<{ occurrenceId: string; activeRunRef: string }> };
    };
    const { occurrenceId, activeRunRef: runId } = occurrences.result.occurrences[0]!;
    const detail = await cli('occurrence', occurrenceId);
    expect(detail.stdout).toContain(`run ${runId}: attempt 1 failed (runtime_error, exit 3)`);
    expect(detail.stdout).toContain('    | starting\n    | boom\n');
    expect(detail.stdout).toContain(`    retry:  coven-automata retry ${runId}\n`);
    expect(detail.stdout).toContain(`    cancel: coven-automata cancel ${occurrenceId}\n`);
    expect((await cli('logs', occurrenceId)).stdout).toBe('starting\nboom\n');
    const followed = await cli('logs', runId, '--follow');
    expect(followed).toMatchObject({ code: 0, stdout: 'starting\nboom\n' });
    expect(followed.stderr).toContain('-- attempt 1 failed');

    const doctor = await cli('doctor');
    expect(doctor.stdout).toContain(`1 run failed and held for operator retry: ${runId} (daily-notes) until`);
    expect(doctor.stdout).toContain(`coven-automata logs ${runId}`);

    // Over loopback HTTP: the output with the token; withheld without it, like every tokenless read.
    const route = `${url}/api/v1/runs/${runId}/output`;
    const owner = (await (await fetch(route, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      result: { output: string; complete: boolean };
    };
    expect(owner.result).toMatchObject({ output: 'starting\nboom\n', complete: true });
    const anonymous = (await (await fetch(route)).json()) as { result: { output: string } };
    expect(anonymous.result.output).toBe('[redacted:output]');
    const bad = await fetch(`${route}?offset=abc`, { headers: { authorization: `Bearer ${token}` } });
    expect(bad.status).toBe(400);
    daemon.child.kill('SIGINT');
    expect(await daemon.exited).toBe(0);
  }, 240_000);
});
