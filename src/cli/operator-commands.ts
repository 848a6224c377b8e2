import type { CommandResponse } from '../command-handler/envelope.js';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import type { ProgramKit } from './program-kit.js';
import { registerRunNowCommand } from './run-now-command.js';

/** attempt.retry.v1 for a run's latest attempt, as the store records it. */
async function retryEnvelope(engine: CliEngine, runId: string): Promise<Record<string, unknown>> {
  const latest = await engine.latestAttempt(runId);
  return envelope('attempt.retry.v1', {
    runId,
    priorAttemptNumber: latest.attemptNumber,
    priorDisposition: latest.disposition,
  });
}

/**
 * Prints a cancel's answer. CANCEL_PENDING is not a failure: the request is committed and the session told to
 * stop, and the cancellation completes when the runtime acknowledges, so it exits 0 and says so (with --json,
 * the response as it is, also exit 0).
 */
export function reportCancel(response: CommandResponse, occurrenceId: string, options: CliOptions): number {
  if (response.outcome !== 'rejected' || response.error?.code !== 'CANCEL_PENDING')
    return report(response, options, (r) => `${occurrenceId}: ${String(r.status)}`);
  if (options.json === true) console.log(JSON.stringify(response, null, 2));
  else
    console.log(
      `${occurrenceId}: cancellation requested; pending until the runtime acknowledges ` +
        '(the session has been told to stop; `occurrence` shows when it settles)',
    );
  return 0;
}

/** `cancel <occurrenceId>`: a cancellation request (see {@link reportCancel}). */
function registerCancelCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('cancel <occurrenceId>')
    .description('cancel an occurrence (a request, pending until the runtime acknowledges, while its session runs)')
    .option('--reason <text>', 'why')
    .action(
      run(async (occurrenceId: string, cmd: { reason?: string }) =>
        withEngine(opts(), async (engine) =>
          reportCancel(
            await engine.commands.handle(
              envelope('occurrence.cancel.v1', {
                occurrenceId,
                ...(cmd.reason === undefined ? {} : { reason: cmd.reason }),
              }),
            ),
            occurrenceId,
            opts(),
          ),
        ),
      ),
    );
}

/** One line saying what a backfill planned. */
function backfillSummary(result: Record<string, unknown>): string {
  const slots = result.slots as string[];
  const planned = (result.planned as string[]).length;
  return (
    `${String(result.automationId)}: ${slots.length} slot(s) in the range, ${planned} planned, ` +
    `${Number(result.alreadyPlanned)} already had an occurrence` +
    (planned > 0 ? '; they run oldest first, one at a time, from the next pass' : '')
  );
}

/** `backfill <automationId> --from T --until T`: plans a past range's slots that never had an occurrence. */
function registerBackfillCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('backfill <automationId>')
    .description('plan every slot of a past range that never had an occurrence (at most 500; idempotent)')
    .requiredOption('--from <instant>', 'the range start, RFC 3339 UTC (2026-12-01T00:00:00Z)')
    .requiredOption('--until <instant>', 'the range end, inclusive, not in the future')
    .action(
      run(async (automationId: string, cmd: { from: string; until: string }) =>
        withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(
              envelope('x-coven-automata.definition.backfill.v1', { automationId, from: cmd.from, until: cmd.until }),
            ),
            opts(),
            backfillSummary,
          ),
        ),
      ),
    );
}

/** run-now, cancel, unquarantine, backfill, retry and recover: operator actions on occurrences and runs. */
export function registerOperatorCommands(kit: ProgramKit): void {
  const { program, opts, run, simple } = kit;
  registerRunNowCommand(kit);
  registerCancelCommand(kit);
  registerBackfillCommand(kit);
  simple(
    'unquarantine',
    'x-coven-automata.definition.unquarantine.v1',
    'lift a quarantine after exhausted retries',
    'automationId',
  );
  program
    .command('retry <runId>')
    .description('operator retry of a held run (attempt n+1)')
    .action(
      run(async (runId: string) =>
        withEngine(opts(), async (engine) =>
          report(await engine.commands.handle(await retryEnvelope(engine, runId)), opts()),
        ),
      ),
    );
  program
    .command('recover <occurrenceId>')
    .description('operator determination for an occurrence in recovery_required')
    .requiredOption('--determination <kind>', 'failed_deterministic | retry_with_new_attempt')
    .requiredOption('--statement <text>', 'what the operator established')
    .action(
      run(async (occurrenceId: string, cmd: { determination: string; statement: string }) =>
        withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(
              envelope('occurrence.recover.v1', {
                occurrenceId,
                evidenceDetermination: cmd.determination,
                statement: cmd.statement,
              }),
            ),
            opts(),
          ),
        ),
      ),
    );
}
