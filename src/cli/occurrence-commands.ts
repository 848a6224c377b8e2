import { Option } from 'commander';
import { OCCURRENCE_VIEWS } from '../command-handler/occurrence-reads.js';
import { CliError, envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import { failureBlock } from './failure-format.js';
import { paint, table } from './format.js';
import type { ProgramKit } from './program-kit.js';
import { receiptLines, verifyReceiptResult } from './receipt-format.js';

type Rendered = Record<string, unknown>;

const text = (value: unknown): string => (value === undefined || value === null ? '-' : String(value));
const painted = (state: unknown) => paint(String(state), String(state));

/** A whole number option within the schema's bounds, so a typo is a usage error naming the option. */
export function wholeNumber(name: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new CliError(`${name}: expected a whole number from 1 to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** The `occurrences` table: newest slot first, and where the page ends the cursor for the next one. */
export function occurrencesTable(result: Rendered): string {
  const rows = (result.occurrences as Rendered[]).map((o) => [
    String(o.occurrenceId),
    String(o.automationId),
    String(o.scheduledFor),
    painted(o.state),
    text(o.activeRunRef),
    typeof o.stateReason === 'string' ? o.stateReason : '',
  ]);
  const cursor = result.cursor as { hasMore: boolean; next?: string };
  const lines = [
    rows.length === 0
      ? `no occurrences in view ${String(result.view)}`
      : table(['occurrence', 'automation', 'scheduled', 'state', 'run', 'reason'], rows),
  ];
  if (cursor.hasMore) lines.push(`more: --cursor ${cursor.next!}`);
  return lines.join('\n');
}

/**
 * `occurrence <id>`: the occurrence, then each run's attempts with their receipts' verification, then how each run
 * that failed failed (and, held for retry, until when and what ends the hold).
 */
export function occurrenceDetail(result: Rendered): string {
  const o = result.occurrence as Rendered;
  const fence = o.fence as { generation: number; claimedBy?: string };
  const lines = [
    `occurrence ${String(o.occurrenceId)} of ${String(o.automationId)} (revision ${String(o.automationRevision)})`,
    `  state      ${painted(o.state)}${typeof o.stateReason === 'string' ? `: ${o.stateReason}` : ''}`,
    `  scheduled  ${String(o.scheduledFor)}`,
    `  fence      generation ${fence.generation}` +
      (fence.claimedBy === undefined ? '' : `, claimed by ${fence.claimedBy}`),
  ];
  const attempts = (result.runs as Rendered[]).flatMap((run) =>
    (run.attempts as Rendered[]).map((a) => {
      const receipt = a.receipt as { verified: boolean; disposition: string } | null;
      return [
        String(run.runId),
        painted(run.state),
        `#${String(a.attemptNumber)}`,
        painted(a.state),
        receipt === null ? 'pending' : `${receipt.disposition}, ${receipt.verified ? 'verified' : 'NOT verified'}`,
      ];
    }),
  );
  lines.push(
    attempts.length === 0
      ? 'no runs yet'
      : table(['run', 'run state', 'attempt', 'attempt state', 'receipt'], attempts),
  );
  const r = result.receipts as { verified: number; unverified: number; pending: number };
  lines.push(`receipts: ${r.verified} verified, ${r.unverified} not verified, ${r.pending} pending`);
  for (const run of result.runs as Rendered[]) lines.push(...failureBlock(run));
  return lines.join('\n');
}

/** `occurrence <id> --history`: the timeline, oldest first, each transition as from → to. */
export function occurrenceTimeline(result: Rendered): string {
  const rows = (result.entries as Rendered[]).map((e) => [
    String(e.position),
    String(e.recordedAt),
    // `run/<runId>` or `occurrence/<id>`: the kind says whose transition it is, the ids are the occurrence's own.
    String(e.stream).split('/')[0]!,
    String(e.kind),
    e.from === undefined ? String(e.summary) : `${String(e.from)} → ${String(e.to)}: ${String(e.reason)}`,
  ]);
  const lines = [table(['position', 'recorded', 'stream', 'event', 'what'], rows)];
  if (result.truncated === true) lines.push('(truncated: --limit shows more)');
  return lines.join('\n');
}

async function readReceipt(engine: CliEngine, runId: string, verify: boolean, opts: CliOptions): Promise<number> {
  const response = await engine.commands.handle(envelope('receipt.get.v1', { runId }));
  if (!verify || response.outcome === 'rejected') return report(response, opts, receiptLines);
  const checked = verifyReceiptResult(response.result!);
  if (opts.json === true) console.log(JSON.stringify({ ...response, result: checked.result }, null, 2));
  else console.log(checked.line);
  return checked.verified ? 0 : 1;
}

/** occurrences, occurrence and receipt: the operator's views of what was planned, ran and was sealed. */
export function registerOccurrenceReads({ program, opts, run }: ProgramKit): void {
  program
    .command('occurrences')
    .description('occurrences newest first: one view of the scheduler (default all), of one automation if named')
    .addOption(new Option('--view <view>', 'which occurrences').choices(OCCURRENCE_VIEWS).default('all'))
    .option('--automation <automationId>', 'only this automation')
    .option('--limit <n>', 'at most n (1 to 100)')
    .option('--cursor <cursor>', 'the page after the one that printed it')
    .action(
      run(async (cmd: { view: string; automation?: string; limit?: string; cursor?: string }) => {
        const limit = wholeNumber('--limit', cmd.limit, 100);
        const payload = {
          view: cmd.view,
          ...(cmd.automation === undefined ? {} : { automationId: cmd.automation }),
          ...(limit === undefined ? {} : { limit }),
          ...(cmd.cursor === undefined ? {} : { cursor: cmd.cursor }),
        };
        return withEngine(opts(), async (engine) =>
          report(await engine.commands.handle(envelope('occurrence.list.v1', payload)), opts(), occurrencesTable),
        );
      }),
    );
  program
    .command('occurrence <occurrenceId>')
    .description('one occurrence with its runs, attempts and receipts; --history for its timeline')
    .option('--history', 'what happened to it, oldest first (occurrence.history.v1)')
    .option('--limit <n>', 'with --history: at most n entries (1 to 1000)')
    .action(
      run(async (occurrenceId: string, cmd: { history?: boolean; limit?: string }) => {
        const limit = wholeNumber('--limit', cmd.limit, 1000);
        if (limit !== undefined && cmd.history !== true) throw new CliError('--limit: only with --history');
        const request =
          cmd.history === true
            ? envelope('occurrence.history.v1', { occurrenceId, ...(limit === undefined ? {} : { limit }) })
            : envelope('occurrence.get.v1', { occurrenceId });
        return withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(request),
            opts(),
            cmd.history === true ? occurrenceTimeline : occurrenceDetail,
          ),
        );
      }),
    );
  program
    .command('receipt <runId>')
    .description("a run's receipt; --verify recomputes its integrity digest (exit 1 when it does not match)")
    .option('--verify', 'recompute the JCS SHA-256 digest here and say whether the receipt verifies')
    .action(
      run(async (runId: string, cmd: { verify?: boolean }) =>
        withEngine(opts(), async (engine) => readReceipt(engine, runId, cmd.verify === true, opts())),
      ),
    );
}
