import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { isContractError } from '../contract/errors.js';
import { packageRoot } from '../contract/package-root.js';
import { CliError, collect, DEFAULT_STORE, type CliOptions } from './context.js';
import { registerDefinitionCommands, registerDefinitionReads } from './definition-commands.js';
import { errorLine } from './error-line.js';
import { registerDoctorCommand } from './doctor-command.js';
import { registerAuthorityCommands } from './authority-commands.js';
import { registerListCommand } from './list-command.js';
import { registerLogsCommand } from './logs-command.js';
import { registerNextCommand } from './next-command.js';
import { registerOccurrenceReads } from './occurrence-commands.js';
import { registerOperatorCommands } from './operator-commands.js';
import { registerLimitsCommands } from './limits-command.js';
import { registerCompletionCommand } from './completion-command.js';
import { addHelpExamples } from './help-examples.js';
import { programKit } from './program-kit.js';
import { registerRunReads } from './read-commands.js';
import { requireExistingStore, storeLocation } from './store-location.js';
import { registerCheckCommands, registerRunCommands } from './tool-commands.js';

/** Commands that only read the store named by --store: against a missing store file they refuse, creating nothing. */
const STORE_READS: ReadonlySet<string> = new Set([
  'list',
  'get',
  'history',
  'health',
  'events',
  'occurrences',
  'occurrence',
  'receipt',
  'next',
]);

const ROOT_EXAMPLES = `
Examples:
  $ coven-automata apply -f examples/daily-notes.json   # define an automation (paused)
  $ coven-automata activate daily-notes                  # schedule it
  $ coven-automata run-now daily-notes                   # run it now and wait for the outcome
  $ coven-automata start                                 # run the scheduler and serve the dashboard
  $ coven-automata demo                                  # the four-day demo on a throwaway store
  $ coven-automata <command> --help                      # what a command does, with an example
`;

/** This package's version, as its package.json gives it. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * `--delivery-file-mode` and `--delivery-folder-mode`: deliveries are private (0600 files, 0700 folders) unless
 * the operator widens them by name.
 */
function addDeliveryModeOptions(program: Command): void {
  program
    .option(
      '--delivery-file-mode <mode>',
      'the octal mode of delivered files (default 0600, the owner only; 0644 lets every local user read them)',
    )
    .option(
      '--delivery-folder-mode <mode>',
      'the octal mode of folders a delivery creates (default 0700; 0755 lets every local user list them)',
    );
}

/** The `coven-automata` command line. */
export function buildProgram(): Command {
  const program = new Command('coven-automata')
    .description('An XState orchestration engine for the coven.automations.v1 contract')
    .version(packageVersion(), '-V, --version', 'print the version')
    .option(
      '--store <file|url>',
      'the store: a .json file (JSON store), a .sqlite/.sqlite3/.db file (SQLite) or a postgres:// URL (PostgreSQL)',
      DEFAULT_STORE,
    )
    .addOption(
      new Option('--store-kind <kind>', 'force the store implementation regardless of the extension').choices([
        'json',
        'sqlite',
      ]),
    )
    .option('--json', 'machine-readable output')
    .option('--command <shell>', 'what the child-process runtime runs per attempt (reads $COVEN_PROMPT)')
    .option(
      '--cwd-root <dir>',
      "a folder sessions may run in, repeatable (default: the store's folder); " +
        'activation refuses a cwd outside every root',
      collect,
    )
    .option(
      '--delivery-root <dir>',
      "the folder atomic outputTargets are delivered under (default: deliveries in the store's folder)",
    )
    .option(
      '--pass-env <name>',
      'an engine environment variable children receive beyond the allowlist, repeatable',
      collect,
    )
    .option(
      '--retention <spec>',
      'how long settled history is kept: off, or <class>=<days|never>[,...] ' +
        '(default ephemeral=1,standard=30,extended=365)',
    )
    .showHelpAfterError()
    .hook('preAction', (_root, action) => {
      if (STORE_READS.has(action.name()))
        requireExistingStore(storeLocation(program.opts<CliOptions>()), action.name());
    });
  addDeliveryModeOptions(program);
  registerSubcommands(program);
  addHelpExamples(program);
  program.addHelpText('after', ROOT_EXAMPLES);
  return program;
}

/** Every subcommand; registration order is the order `--help` lists them in. */
function registerSubcommands(program: Command): void {
  const kit = programKit(program);
  registerDefinitionCommands(kit);
  registerOperatorCommands(kit);
  registerLimitsCommands(kit);
  registerListCommand(kit);
  registerDefinitionReads(kit);
  registerRunReads(kit);
  registerOccurrenceReads(kit);
  registerLogsCommand(kit);
  registerNextCommand(kit);
  registerRunCommands(kit);
  registerCheckCommands(kit);
  registerDoctorCommand(kit);
  registerAuthorityCommands(kit);
  registerCompletionCommand(kit);
}

/**
 * Runs the CLI; user errors print one line (code, status, explanation and the fields that failed) and exit 1,
 * never a stack trace. With --json a typed error is printed as its error envelope instead.
 */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  // No arguments asks what the tool does: the help, never a command with effects.
  if (argv.length === 0) {
    program.configureOutput({ writeOut: (text) => console.log(text.trimEnd()) }).outputHelp();
    return;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (isContractError(error)) {
      if (program.opts<CliOptions>().json === true)
        console.log(JSON.stringify({ outcome: 'rejected', error: error.toEnvelope() }, null, 2));
      else console.error(errorLine(error.toEnvelope()));
    } else if (error instanceof CliError) console.error(error.message);
    else console.error(`internal error: ${(error as Error)?.message ?? String(error)}`);
    process.exitCode = 1;
  }
}
