import { setTimeout as delay } from 'node:timers/promises';
import type { CommandResponse } from '../command-handler/envelope.js';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import type { ProgramKit } from './program-kit.js';
import { wholeNumber } from './occurrence-commands.js';

const COMMAND = 'x-coven-automata.run.output.v1';
/** The most one read returns, as the read command bounds it. */
const WINDOW = 1024 * 1024;
/** How often `--follow` asks for more while the session runs. */
const FOLLOW_EVERY_MS = 500;

type Output = {
  runId: string;
  attemptNumber: number | null;
  attemptState: string | null;
  available: boolean;
  output: string;
  offset: number;
  nextOffset: number;
  size: number;
  complete: boolean;
};

/** A run id names a run; anything else is an occurrence (the ids the CLI prints). */
const targetOf = (id: string) => (id.startsWith('run-') ? { runId: id } : { occurrenceId: id });

async function readOutput(engine: CliEngine, payload: Record<string, unknown>): Promise<CommandResponse> {
  return engine.commands.handle(envelope(COMMAND, payload));
}

/** What stands where the output would be: why there is none, or that only its end is shown. */
function note(o: Output): string | undefined {
  if (o.attemptNumber === null) return `run ${o.runId} has no attempt yet: nothing printed`;
  if (!o.available) return `attempt ${o.attemptNumber} (${String(o.attemptState)}) has no output this engine can read`;
  if (o.offset > 0) return `(the last ${o.size - o.offset} of ${o.size} bytes; earlier output is not shown)`;
  return undefined;
}

/** `--follow`: prints each new part as the session prints it, until it ends (or SIGINT/SIGTERM). */
async function follow(engine: CliEngine, target: Record<string, unknown>, first: Output): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    let last = first;
    while (!last.complete && !controller.signal.aborted) {
      await delay(FOLLOW_EVERY_MS, undefined, { signal: controller.signal }).catch(() => undefined);
      const next = await readOutput(engine, { ...target, offset: last.attemptNumber === null ? 0 : last.nextOffset });
      if (next.outcome === 'rejected') return report(next, {});
      const o = next.result as Output;
      // A new attempt (an operator retry) has its own output: read it from its beginning next.
      if (o.attemptNumber !== last.attemptNumber && o.offset > 0) {
        last = { ...o, nextOffset: 0, complete: false };
        continue;
      }
      process.stdout.write(o.output);
      last = o;
    }
    const ended = note(last);
    if (ended !== undefined && !last.available) console.error(ended);
    if (last.complete) console.error(`-- attempt ${String(last.attemptNumber)} ${String(last.attemptState)}`);
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

async function showLogs(
  engine: CliEngine,
  id: string,
  cmd: { follow?: boolean; attempt?: string },
  opts: CliOptions,
): Promise<number> {
  const attemptNumber = wholeNumber('--attempt', cmd.attempt, 10);
  const target = { ...targetOf(id), ...(attemptNumber === undefined ? {} : { attemptNumber }) };
  const response = await readOutput(engine, { ...target, offset: cmd.follow === true ? 0 : -WINDOW, limit: WINDOW });
  if (opts.json === true || response.outcome === 'rejected') return report(response, opts);
  const first = response.result as Output;
  process.stdout.write(first.output);
  const why = note(first);
  if (why !== undefined) console.error(why);
  return cmd.follow === true ? follow(engine, target, first) : 0;
}

/** `logs <run|occurrence> [--follow] [--attempt n]`: what an attempt's session printed. */
export function registerLogsCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('logs <runOrOccurrenceId>')
    .description(
      "what a run's latest attempt printed (stdout and stderr; an occurrence: its latest run), at most its last " +
        'MiB; --follow prints more as it comes until the session ends. Example: coven-automata logs run-occ-…',
    )
    .option('--follow', 'keep printing new output until the session ends (or Ctrl-C)')
    .option('--attempt <n>', "that attempt's output instead of the latest's")
    .action(
      run(async (id: string, cmd: { follow?: boolean; attempt?: string }) =>
        withEngine(opts(), async (engine) => showLogs(engine, id, cmd, opts())),
      ),
    );
}
