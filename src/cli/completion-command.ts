import type { Command } from 'commander';
import { CliError } from './context.js';
import { allCommands, commandPath } from './help-examples.js';
import type { ProgramKit } from './program-kit.js';

/** A word the shell may offer at a command path: a subcommand or an option, with what it does. */
interface Candidate {
  word: string;
  about: string;
}

/** The candidates at each command path ('' is the program itself): its subcommands, then its options. */
function candidatesByPath(program: Command): Map<string, Candidate[]> {
  const byPath = new Map<string, Candidate[]>();
  for (const command of [program, ...allCommands(program)]) {
    const subcommands = command.commands.map((c) => ({ word: c.name(), about: c.description() }));
    const options = command.options.flatMap((o) =>
      [o.long, o.short]
        .filter((flag): flag is string => flag !== undefined)
        .map((word) => ({ word, about: o.description })),
    );
    byPath.set(command === program ? '' : commandPath(command), [...subcommands, ...options]);
  }
  return byPath;
}

/** A word quoted for both shells' single quotes. */
const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const firstLine = (text: string) => text.split('\n')[0]!.slice(0, 100);

/** The `case` arm patterns of every command path, so the function can tell a command word from an argument. */
const pathPatterns = (byPath: Map<string, Candidate[]>) =>
  [...byPath.keys()]
    .filter((path) => path !== '')
    .map(quoted)
    .join('|');

/**
 * A bash completion function for the program: subcommands and options at each command path, and file names
 * (`complete -o default`) where nothing else fits, such as `apply -f <file>` or `--store <file>`.
 */
export function bashCompletion(program: Command): string {
  const byPath = candidatesByPath(program);
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
  const arms = [...byPath].map(
    ([path, words]) => `    ${quoted(path)}) words=${quoted(words.map((w) => w.word).join(' '))} ;;`,
  );
  return [
    `# bash completion for ${name}: source <(${name} completion bash)`,
    `${fn}() {`,
    '  local cur=${COMP_WORDS[COMP_CWORD]} path= next i words',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    next=${path:+$path }${COMP_WORDS[i]}',
    '    case "$next" in',
    `      ${pathPatterns(byPath)}) path=$next ;;`,
    '    esac',
    '  done',
    '  case "$path" in',
    ...arms,
    '  esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    `complete -o default -F ${fn} ${name}`,
    '',
  ].join('\n');
}

/** A zsh completion function: the same candidates, each with what it does, and file names otherwise. */
export function zshCompletion(program: Command): string {
  const byPath = candidatesByPath(program);
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
  const described = (c: Candidate) => quoted(`${c.word.replace(/:/g, '\\:')}:${firstLine(c.about)}`);
  const arms = [...byPath].map(
    ([path, words]) => `    ${quoted(path)}) candidates=(${words.map(described).join(' ')}) ;;`,
  );
  return [
    `#compdef ${name}`,
    `# zsh completion for ${name}: ${name} completion zsh > "\${fpath[1]}/_${name}"`,
    `${fn}() {`,
    '  local path_= next i',
    '  local -a candidates',
    '  for ((i = 2; i < CURRENT; i++)); do',
    '    next=${path_:+$path_ }${words[i]}',
    '    case "$next" in',
    `      ${pathPatterns(byPath)}) path_=$next ;;`,
    '    esac',
    '  done',
    '  case "$path_" in',
    ...arms,
    '  esac',
    `  _describe -t commands '${name}' candidates || _files`,
    '}',
    `compdef ${fn} ${name}`,
    '',
  ].join('\n');
}

/** `completion bash|zsh`: prints the completion script for the shell. */
export function registerCompletionCommand({ program, run }: ProgramKit): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script for bash or zsh (source it, or install it as shown below)')
    .addHelpText(
      'after',
      '\nInstall:\n' +
        "  bash: echo 'source <(coven-automata completion bash)' >> ~/.bashrc\n" +
        "  zsh:  echo 'source <(coven-automata completion zsh)' >> ~/.zshrc   (after compinit)\n",
    )
    .action(
      run(async (shell: string) => {
        if (shell !== 'bash' && shell !== 'zsh')
          throw new CliError(`completion: expected bash or zsh, got ${JSON.stringify(shell)}`);
        console.log((shell === 'bash' ? bashCompletion(program) : zshCompletion(program)).trimEnd());
      }),
    );
}
