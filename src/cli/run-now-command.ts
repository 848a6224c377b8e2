import { AttemptState, OccurrenceState } from '../../machines/index.js';
import { CliError, envelope, report, withEngine, type CliEngine, type CliOptions, type CliOutput } from './context.js';
import { errorLine } from './error-line.js';
import type { ProgramKit } from './program-kit.js';

/** How often a waiting run-now runs an engine pass, and how often it says it is still waiting. */
const PASS_EVERY_MS = 200;
const PROGRESS_EVERY_S = 10;

const SETTLED_OCCURRENCE = new Set<string>([
  OccurrenceState.succeeded,
  OccurrenceState.failed,
  OccurrenceState.cancelled,
  OccurrenceState.timed_out,
  OccurrenceState.skipped,
  OccurrenceState.superseded,
  OccurrenceState.recovery_required,
]);
const LIVE_ATTEMPT = new Set<string>([
  AttemptState.adopted,
  AttemptState.dispatching,
  AttemptState.started,
  AttemptState.observing,
]);

interface Attempt {
  attemptNumber: number;
  state: string;
}
interface Run {
  runId: string;
  state: string;
  attempts: Attempt[];
}
interface Detail {
  occurrence: { occurrenceId: string; state: string };
  runs: Run[];
}

/**
 * Where an occurrence stands once no session of it runs any more, as one line; undefined while one still
 * runs. A run whose attempt ended without settling it is held for an operator retry (the contract's state).
 */
export function settledLine(detail: Detail): string | undefined {
  const { occurrenceId, state } = detail.occurrence;
  const run = detail.runs.at(-1);
  const attempt = run?.attempts.at(-1);
  const ran = run === undefined || attempt === undefined ? '' : ` (run ${run.runId}, attempt ${attempt.attemptNumber})`;
  if (state === OccurrenceState.recovery_required)
    return (
      `${occurrenceId}: recovery required${ran}; an operator decides: coven-automata recover ${occurrenceId} ` +
      '--determination failed_deterministic|retry_with_new_attempt --statement <what you established>'
    );
  if (SETTLED_OCCURRENCE.has(state)) return `${occurrenceId}: ${state}${ran}`;
  if (run === undefined || attempt === undefined || LIVE_ATTEMPT.has(attempt.state)) return undefined;
  return (
    `${occurrenceId}: attempt ${attempt.attemptNumber} ${attempt.state}; run ${run.runId} is held for an operator ` +
    `retry until its deadline: coven-automata retry ${run.runId}, or coven-automata cancel ${occurrenceId}`
  );
}

/**
 * Runs engine passes (the CLI's own engine on the store it opened) until the occurrence's session ended and
 * its outcome is recorded, saying every `progressEveryMs` that it still waits. SIGINT/SIGTERM stop the
 * waiting, not the run: it then says who settles it.
 */
async function waitForSettlement(
  pass: () => Promise<void>,
  engine: CliEngine,
  occurrenceId: string,
  { out, progressEveryMs }: { out: CliOutput; progressEveryMs: number },
): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const started = Date.now();
  let nextProgress = started + progressEveryMs;
  try {
    while (!controller.signal.aborted) {
      await pass();
      const got = await engine.commands.handle(envelope('occurrence.get.v1', { occurrenceId }));
      if (got.outcome === 'rejected') throw new CliError(errorLine(got.error!));
      const line = settledLine(got.result as unknown as Detail);
      if (line !== undefined) {
        out.log(line);
        return 0;
      }
      if (Date.now() >= nextProgress) {
        out.log(
          `${occurrenceId}: still running after ${Math.round((Date.now() - started) / 1000)} s ` +
            '(Ctrl-C stops waiting; the run goes on)',
        );
        nextProgress += progressEveryMs;
      }
      await new Promise((wake) => setTimeout(wake, PASS_EVERY_MS));
    }
    out.log(`${occurrenceId}: stopped waiting; it is settled by the next engine on this store: coven-automata start`);
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/**
 * `run-now <id>`: commits the manual occurrence and prints its id; then, on a store this process opened, keeps
 * its engine running until the run settles (`--no-wait` returns at once and says who settles it); a daemon
 * serving the store settles it itself. With --json stdout holds the command's response only.
 */
async function runNowCommand(engine: CliEngine, automationId: string, cmd: RunNowOptions, options: CliOptions) {
  const response = await engine.commands.handle(envelope('occurrence.runNow.v1', { automationId }));
  const occurrenceId = String(response.result?.occurrenceId);
  const status = report(response, options, () => `${automationId}: occurrence ${occurrenceId} launched`);
  if (status !== 0) return status;
  const out: CliOutput = options.json === true ? { log: console.error, error: console.error } : console;
  if (engine.pass === undefined) {
    out.log(`the daemon serving this store settles it; see it with: coven-automata occurrence ${occurrenceId}`);
    return 0;
  }
  if (!cmd.wait) {
    out.log(
      `nothing settles it until an engine runs on this store: coven-automata start ` +
        `(then coven-automata occurrence ${occurrenceId})`,
    );
    return 0;
  }
  out.log(`${occurrenceId}: waiting for the run to settle (this process runs the engine until then)`);
  return waitForSettlement(engine.pass, engine, occurrenceId, {
    out,
    progressEveryMs: progressSeconds(cmd.progressEvery) * 1000,
  });
}

interface RunNowOptions {
  wait: boolean;
  progressEvery: string;
}

function progressSeconds(text: string): number {
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || seconds < 0.1 || seconds > 3600)
    throw new CliError(`--progress-every: expected seconds from 0.1 to 3600, got ${JSON.stringify(text)}`);
  return seconds;
}

/** `run-now <automationId> [--no-wait] [--progress-every <seconds>]`. */
export function registerRunNowCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('run-now <automationId>')
    .description(
      'run an active automation now: prints the occurrence id; without a daemon this process runs the engine ' +
        'until the run settles',
    )
    .option('--no-wait', 'return once the run is launched (without a daemon it is settled by the next start)')
    .option('--progress-every <seconds>', 'while waiting, how often to say it still waits', String(PROGRESS_EVERY_S))
    .action(
      run(async (id: string, cmd: RunNowOptions) => {
        progressSeconds(cmd.progressEvery);
        return withEngine(opts(), (engine) => runNowCommand(engine, id, cmd, opts()));
      }),
    );
}
