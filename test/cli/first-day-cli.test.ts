import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { allCommands, commandPath } from '../../src/cli/help-examples.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition } from './cli-fixtures.js';

// The CLI as a new user meets it: help first, examples everywhere, completion, and a run-now that settles.
const dir = mkdtempSync(join(tmpdir(), 'coven-cli-first-day-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The whole help a command prints for --help, including the text added after it. */
function helpOf(path: string): string {
  let text = '';
  const program = buildProgram();
  const command = path === '' ? program : allCommands(program).find((c) => commandPath(c) === path)!;
  command.configureOutput({ writeOut: (s) => void (text += s), writeErr: (s) => void (text += s) });
  command.outputHelp();
  return text;
}

describe('a CLI that behaves like one', () => {
  test('no arguments prints the help with examples, runs nothing and creates nothing', async () => {
    const cwd = process.cwd();
    const folder = mkdtempSync(join(dir, 'bare-'));
    process.chdir(folder);
    try {
      const bare = await runCli();
      expect(bare.code).toBe(0);
      expect(bare.out).toContain('Usage: coven-automata [options] [command]');
      expect(bare.out).toContain('$ coven-automata demo');
      expect(existsSync(join(folder, '.coven'))).toBe(false);
    } finally {
      process.chdir(cwd);
    }
  });

  test('every command says what it does (not a contract command name) and gives an example', () => {
    const commands = allCommands(buildProgram()).map(commandPath);
    expect(commands.length).toBeGreaterThan(40);
    for (const path of commands) {
      const help = helpOf(path);
      expect(help, `${path} --help`).toMatch(/\nExamples?:\n {2}\$ coven-automata /);
      const description = allCommands(buildProgram())
        .find((c) => commandPath(c) === path)!
        .description();
      expect(description, `${path}: its description`).not.toMatch(/^[\w.-]+\.v1$/);
    }
  });

  test('completion bash completes commands, subcommands and options in bash itself', async () => {
    const script = join(dir, 'completion.bash');
    writeFileSync(script, (await runCli('completion', 'bash')).out);
    const complete = (...words: string[]) =>
      execFileSync('bash', [
        '-c',
        `source ${script}; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _coven_automata; echo "\${COMPREPLY[*]}"`,
        'bash',
        'coven-automata',
        ...words,
      ])
        .toString()
        .trim();
    expect(complete('acti')).toBe('activate');
    expect(complete('acl', 'g')).toBe('grant');
    expect(complete('--store', 'x.json', 'run-now', '--n')).toBe('--no-wait');
    expect(complete('events', '--s')).toBe('--stream');
    expect(execFileSync('bash', ['-n', script]).toString()).toBe('');
  });

  test('completion zsh names every command with what it does; another shell is one line, exit 1', async () => {
    const zsh = await runCli('completion', 'zsh');
    expect(zsh.code).toBe(0);
    expect(zsh.out.split('\n')[0]).toBe('#compdef coven-automata');
    expect(zsh.out).toContain("'run-now:run an active automation now");
    expect(zsh.out).toContain('compdef _coven_automata coven-automata');
    expect(await runCli('completion', 'fish')).toMatchObject({
      code: 1,
      err: 'completion: expected bash or zsh, got "fish"',
    });
  });
});

describe('run-now without a daemon', () => {
  const setup = async (id: string) => {
    const folder = mkdtempSync(join(dir, 'run-now-'));
    const store = join(folder, 'automations.json');
    await activeDefinition(store, folder, id);
    return (...args: string[]) => runCli('--store', store, ...args);
  };

  test('prints the occurrence id and runs the engine until the run settled; nothing is left running', async () => {
    const cli = await setup('nightly');
    const ran = await cli('--command', 'true', 'run-now', 'nightly');
    expect(ran.code).toBe(0);
    const [launched, waiting, settled] = ran.out.split('\n');
    const id = /^nightly: occurrence (occ-manual-[0-9a-f]+) launched$/.exec(launched!)?.[1];
    expect(id, ran.out).toBeDefined();
    expect(waiting).toBe(`${id}: waiting for the run to settle (this process runs the engine until then)`);
    expect(settled).toBe(`${id}: succeeded (run run-${id}, attempt 1)`);
    const occurrence = JSON.parse((await cli('--json', 'occurrence', id!)).out) as {
      result: { occurrence: { state: string }; runs: Array<{ state: string }> };
    };
    expect(occurrence.result.occurrence.state).toBe('succeeded');
    expect(occurrence.result.runs.map((r) => r.state)).toEqual(['succeeded']);
    const doctor = JSON.parse((await cli('--json', 'doctor')).out) as {
      counts: { running: number };
      findings: Array<{ code: string; subjectIds: string[] }>;
    };
    expect(doctor.counts.running).toBe(0);
    expect(doctor.findings.filter((f) => f.subjectIds.includes(id!))).toEqual([]);
  });

  test('a failed attempt ends the wait with the run held for retry and the commands that act on it', async () => {
    const cli = await setup('failing');
    const ran = await cli('--command', 'exit 3', 'run-now', 'failing');
    expect(ran.code).toBe(0);
    const id = /occurrence (occ-manual-[0-9a-f]+) launched/.exec(ran.out)![1]!;
    expect(ran.out.split('\n').at(-1)).toBe(
      `${id}: attempt 1 failed; run run-${id} is held for an operator retry until its deadline: ` +
        `coven-automata retry run-${id}, or coven-automata cancel ${id}`,
    );
  });

  test('a long run prints a progress line while it waits', async () => {
    const cli = await setup('slow');
    const ran = await cli('--command', 'sleep 1', 'run-now', '--progress-every', '0.2', 'slow');
    expect(ran.code).toBe(0);
    expect(ran.out).toMatch(/: still running after \d+ s \(Ctrl-C stops waiting; the run goes on\)\n/);
    expect(ran.out).toMatch(/: succeeded \(run run-occ-manual-[0-9a-f]+, attempt 1\)$/);
  });

  test('--no-wait says plainly who settles the run; with --json stdout holds only the response', async () => {
    const cli = await setup('later');
    const ran = await cli('--command', 'true', 'run-now', '--no-wait', 'later');
    expect(ran.code).toBe(0);
    const [launched, who] = ran.out.split('\n');
    expect(launched).toMatch(/^later: occurrence occ-manual-[0-9a-f]+ launched$/);
    expect(who).toMatch(/^nothing settles it until an engine runs on this store: coven-automata start /);
    const json = await cli('--json', '--command', 'true', 'run-now', 'later');
    expect(json.code, json.err).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ outcome: 'rejected', error: { code: 'OVERLAP_FORBIDDEN' } });
  });
});
