import type { FlowReport, GateReport } from '../domain/flow-report.js';
import { readJsonFile } from './apply-command.js';
import { CliError, envelope, report, withEngine } from './context.js';
import type { ProgramKit } from './program-kit.js';

/** One gate as a line: its key, what it holds against each limit, and who waits at it. */
export function gateLine(gate: GateReport): string {
  const parts: string[] = [];
  if (gate.inFlight !== undefined) parts.push(`in flight ${gate.inFlight.count}/${gate.inFlight.cap}`);
  if (gate.rate !== undefined)
    parts.push(
      `rate ${gate.rate.used}/${gate.rate.limit} per ${gate.rate.perMinutes} min` +
        (gate.rate.reopensAt === null ? '' : ` (reopens ${gate.rate.reopensAt})`),
    );
  parts.push(`${gate.waiting.length} waiting`);
  return `${gate.key.padEnd(28)} ${parts.join(', ')}${gate.closed ? ' — full' : ''}`;
}

/** The limits and every gate, as `limits show` prints them. */
function limitsSummary(result: Record<string, unknown>): string {
  const flow = result as unknown as FlowReport;
  if (flow.revision === 0 && flow.gates.length === 0)
    return 'no limits set (coven-automata limits set -f limits.json sets caps per runtime and per tag)';
  const head = `limits revision ${flow.revision}${flow.setAt === null ? '' : `, set ${flow.setAt}`}`;
  if (flow.gates.length === 0) return `${head}; no gate limits anything`;
  return [head, ...flow.gates.map(gateLine)].join('\n');
}

/** A whole number of revisions, or a usage error naming the option. */
function revisionOption(text: string): number {
  const revision = Number(text);
  if (!Number.isSafeInteger(revision) || revision < 0)
    throw new CliError(`--expect-revision takes a whole number, not ${JSON.stringify(text)}`);
  return revision;
}

/** `limits show` and `limits set -f <file>`: the store-wide caps and rate limits (x-coven-automata.limits.*). */
export function registerLimitsCommands({ program, opts, run }: ProgramKit): void {
  const limits = program.command('limits').description('caps and rate limits every engine of the store holds');
  limits
    .command('show')
    .description('the limits, and per gate the work in flight, the claims in its rate window and the work waiting')
    .action(
      run(async () =>
        withEngine(opts(), async (engine) =>
          report(await engine.commands.handle(envelope('x-coven-automata.limits.get.v1', {})), opts(), limitsSummary),
        ),
      ),
    );
  limits
    .command('set')
    .description('replace the limits with a JSON file\'s ({"runtimes": {…}, "tags": {…}})')
    .requiredOption('-f, --file <file>', 'the limits, as spec/coven-automata/v1/flow-limits.schema.json admits them')
    .option(
      '--expect-revision <n>',
      'refuse (REVISION_CONFLICT) unless the limits are at this revision',
      revisionOption,
    )
    .action(
      run(async (cmd: { file: string; expectRevision?: number }) => {
        const payload = {
          limits: readJsonFile(cmd.file),
          ...(cmd.expectRevision === undefined ? {} : { expectedLimitsRevision: cmd.expectRevision }),
        };
        return withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(envelope('x-coven-automata.limits.set.v1', payload)),
            opts(),
            (r) => `limits revision ${String(r.revision)} set; in flight now: ${JSON.stringify(r.inFlight)}`,
          ),
        );
      }),
    );
}
