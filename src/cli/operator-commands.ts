import { envelope, report, withEngine, type CliEngine } from './context.js';
import type { ProgramKit } from './program-kit.js';

/** attempt.retry.v1 for a run's latest attempt, as the store records it. */
async function retryEnvelope(engine: CliEngine, runId: string): Promise<Record<string, unknown>> {
  const latest = await engine.latestAttempt(runId);
  return envelope('attempt.retry.v1', {
    runId,
    priorAttemptNumber: latest.attemptNumber,
    priorDisposition: latest.disposition,
  });
}

/** run-now, cancel, unquarantine, retry and recover: operator actions on occurrences and runs. */
export function registerOperatorCommands({ program, opts, run, simple }: ProgramKit): void {
  simple('run-now', 'occurrence.runNow.v1', 'run an active automation now (launches at once)', 'automationId');
  simple('cancel', 'occurrence.cancel.v1', 'cancel an occurrence (a request while its session runs)', 'occurrenceId');
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
