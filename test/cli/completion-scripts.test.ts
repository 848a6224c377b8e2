import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, expect, test } from 'vitest';
import { bashCompletion, zshCompletion } from '../../src/cli/completion-command.js';
import { allCommands, commandPath } from '../../src/cli/help-examples.js';
import { buildProgram } from '../../src/cli/program.js';

// zsh is not installed on the machines this suite runs on, so the zsh script cannot be run here. These checks
// read it as zsh would (its single-quoted words and `case` arms) and hold it to the commands the program
// registers and to what the bash script, which bash does run, completes at the same place.
const dir = mkdtempSync(join(tmpdir(), 'coven-completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The words of a shell line as single quotes and backslashes make them (`'a'\''b'` is one word: a'b). */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      expect(end, `unterminated quote in ${text}`).toBeGreaterThan(i);
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (c === '\\') word = (word ?? '') + text[++i]!;
    else if (c === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** What `_describe` makes of `word:description`: the word before the first unescaped colon. */
function described(entry: string): { word: string; about: string } {
  const colon = /(?<!\\):/.exec(entry);
  expect(colon, `no description in ${entry}`).not.toBeNull();
  return { word: entry.slice(0, colon!.index).replace(/\\:/g, ':'), about: entry.slice(colon!.index + 1) };
}

/** The candidates of each `case "$path_"` arm of the zsh script, by command path. */
function zshArms(script: string): Map<string, Array<{ word: string; about: string }>> {
  const arms = new Map<string, Array<{ word: string; about: string }>>();
  for (const line of script.split('\n')) {
    const arm = /^ {4}('(?:[^']|'\\'')*'|'')\) candidates=\((.*)\) ;;$/.exec(line);
    if (arm === null) continue;
    const [path] = shellWords(arm[1]!);
    arms.set(path ?? '', shellWords(arm[2]!).map(described));
  }
  return arms;
}

/** What a command offers at its path: its subcommands, then its options' flags. */
function offered(command: Command): string[] {
  return [
    ...command.commands.map((c) => c.name()),
    ...command.options.flatMap((o) => [o.long, o.short].filter((flag): flag is string => flag !== undefined)),
  ];
}

test('the zsh script offers, at every command path the program registers, its subcommands and options', () => {
  const program = buildProgram();
  const script = zshCompletion(program);
  const arms = zshArms(script);
  const commands = allCommands(program);
  expect(commands.length).toBeGreaterThan(40);
  // A command added to the program without its arm here (or an arm for a command that is gone) fails this.
  expect([...arms.keys()].sort()).toEqual(['', ...commands.map(commandPath)].sort());
  expect(arms.get('')!.map((c) => c.word)).toEqual(offered(program));
  for (const command of commands) {
    const path = commandPath(command);
    const candidates = arms.get(path)!;
    expect(
      candidates.map((c) => c.word),
      path,
    ).toEqual(offered(command));
    for (const sub of command.commands) {
      const about = candidates.find((c) => c.word === sub.name())!.about;
      expect(about, `${path} ${sub.name()}`).toBe(sub.description().split('\n')[0]!.slice(0, 100));
      expect(about.length, `${path} ${sub.name()} says what it does`).toBeGreaterThan(0);
    }
  }
  // The loop that finds the command path knows every path, so each arm can be reached.
  const patterns = /^ {6}(.*)\) path_=\$next ;;$/m.exec(script);
  expect(patterns).not.toBeNull();
  expect(shellWords(patterns![1]!.replace(/\|/g, ' ')).sort()).toEqual(commands.map(commandPath).sort());
  // The structure zsh needs: its header, every `case` closed, the function registered for the program.
  const lines = script.split('\n');
  expect(lines[0]).toBe('#compdef coven-automata');
  expect(lines.filter((l) => /\bcase\b/.test(l)).length).toBe(lines.filter((l) => /\besac\b/.test(l)).length);
  expect(script).toMatch(/\n {2}_describe -t commands 'coven-automata' candidates \|\| _files\n\}\n/);
  expect(script.trimEnd().split('\n').at(-1)).toBe('compdef _coven_automata coven-automata');
});

test('at every command path the zsh script offers exactly what bash, running its own script, completes', () => {
  const program = buildProgram();
  const script = join(dir, 'completion.bash');
  writeFileSync(script, bashCompletion(program));
  const paths = ['', ...allCommands(program).map(commandPath)];
  // One bash run completes an empty word after each path: one line of candidates per path.
  const probe = paths
    .map(
      (path) =>
        `COMP_WORDS=(coven-automata ${path} ''); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); ` +
        '_coven_automata; echo "${COMPREPLY[*]}"',
    )
    .join('\n');
  const answered = execFileSync('bash', ['-c', `source ${script}\n${probe}`])
    .toString()
    .split('\n');
  const arms = zshArms(zshCompletion(program));
  paths.forEach((path, i) => {
    expect(
      arms.get(path)!.map((c) => c.word),
      path,
    ).toEqual(answered[i]!.split(' ').filter(Boolean));
  });
});
