import type { Command } from 'commander';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';

/** What every group of subcommands needs to register itself on the program. */
export interface ProgramKit {
  readonly program: Command;
  /** The global options, read when an action runs (after parsing). */
  readonly opts: () => CliOptions;
  /** Wraps an action so its returned number becomes the process exit code. */
  readonly run: <A extends unknown[]>(handler: (...args: A) => Promise<number | void>) => (...args: A) => Promise<void>;
  /** A subcommand sending one command envelope whose only argument is an id field. */
  readonly simple: (
    name: string,
    command: string,
    describe: string,
    field: string,
    extra?: (engine: CliEngine, id: string) => Promise<Record<string, unknown>>,
  ) => Command;
}

/** The kit for `program`, whose global options must already be declared. */
export function programKit(program: Command): ProgramKit {
  const opts = (): CliOptions => program.opts<CliOptions>();
  const run =
    <A extends unknown[]>(handler: (...args: A) => Promise<number | void>) =>
    async (...args: A) => {
      process.exitCode = (await handler(...args)) ?? 0;
    };
  const simple: ProgramKit['simple'] = (name, command, describe, field, extra) =>
    program
      .command(`${name} <${field}>`)
      .description(describe)
      .action(
        run(async (id: string) =>
          withEngine(opts(), async (engine) =>
            report(
              await engine.commands.handle(
                envelope(command, { [field]: id, ...(extra === undefined ? {} : await extra(engine, id)) }),
              ),
              opts(),
            ),
          ),
        ),
      );
  return { program, opts, run, simple };
}
