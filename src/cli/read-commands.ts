import type { StreamRef } from '../changefeed/event-envelope.js';
import { ContractError } from '../contract/errors.js';
import { streamRefOf } from '../changefeed/event-envelope.js';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import { historyTable } from './history-format.js';
import type { ProgramKit } from './program-kit.js';

interface PrintedEvent {
  sequence: number;
  kind: string;
  stream: { kind: string; id: string };
  recordedAt: string;
  summary: string;
}

const eventLine = (e: PrintedEvent) =>
  `${String(e.sequence).padStart(4)} ${e.recordedAt} ${e.stream.kind}/${e.stream.id} ${e.kind}: ${e.summary}`;

const STREAM_KINDS = ['feed', 'automation', 'occurrence', 'run'] as const;

/** `--stream kind/id`, refused with VALIDATION_FAILED unless its kind is one the changefeed has. */
function streamOption(text: string): StreamRef {
  const stream = streamRefOf(text);
  if (!(STREAM_KINDS as readonly string[]).includes(stream.kind) || stream.id === '')
    throw new ContractError(
      'VALIDATION_FAILED',
      `--stream ${JSON.stringify(text)}: expected <kind>/<id> with kind ${STREAM_KINDS.join(', ')} ` +
        '(e.g. automation/daily-notes, or feed/all for every event)',
      { field: '--stream', stream: text },
    );
  return stream;
}

/** `--after n`: the cursor each printed line starts with, or -1 for the beginning. */
function cursorOption(text: string): number {
  if (!/^(-1|\d{1,15})$/.test(text))
    throw new ContractError(
      'VALIDATION_FAILED',
      `--after ${JSON.stringify(text)}: expected a cursor, the number each event line starts with (-1 for the start)`,
      { field: '--after', after: text },
    );
  return Number(text);
}

/**
 * A stream other than the feed that has no event at all does not exist as named (every automation, occurrence
 * and run stream starts with the event that created it): refused with NOT_FOUND instead of an empty page.
 */
async function requireStream(engine: CliEngine, stream: StreamRef): Promise<void> {
  if (stream.kind === 'feed') return;
  const first = await engine.commands.handle(envelope('events.read.v1', { stream, after: -1, limit: 1 }));
  if (first.outcome === 'rejected' || (first.result!.events as unknown[]).length > 0) return;
  const where =
    stream.kind === 'automation'
      ? '`coven-automata list` names the automations'
      : '`coven-automata occurrences` names occurrences and runs';
  throw new ContractError(
    'NOT_FOUND',
    `no events on stream ${stream.kind}/${stream.id}: ` +
      `no ${stream.kind} ${JSON.stringify(stream.id)} in this store (${where})`,
    { kind: stream.kind, id: stream.id },
  );
}

/**
 * `events`: one page of a stream, or with --follow every event after the cursor and then each new one as it
 * commits (from the daemon's stream, or the store this process opened) until SIGINT/SIGTERM. Every line, paged
 * or followed, starts with the cursor `--after` takes (the global position on the feed, the sequence on a
 * stream), then the instant the event was recorded.
 */
async function readEvents(
  engine: CliEngine,
  cmd: { stream: string; after: string; follow?: boolean },
  opts: CliOptions,
): Promise<number> {
  const stream = streamOption(cmd.stream);
  const after = cursorOption(cmd.after);
  await requireStream(engine, stream);
  if (cmd.follow !== true) {
    // The same cursor --follow prints: the page's global positions on the feed, the sequence on a stream.
    const cursorOf = (r: Record<string, unknown>, e: PrintedEvent, i: number) =>
      stream.kind === 'feed' ? (r.positions as number[])[i]! : e.sequence;
    return report(await engine.commands.handle(envelope('events.read.v1', { stream, after, limit: 1000 })), opts, (r) =>
      (r.events as PrintedEvent[]).map((e, i) => eventLine({ ...e, sequence: cursorOf(r, e, i) })).join('\n'),
    );
  }
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  for await (const { position, event } of engine.follow(stream, { after, signal: controller.signal }))
    console.log(opts.json === true ? JSON.stringify({ position, event }) : eventLine({ ...event, sequence: position }));
  return 0;
}

/** history, health and events: what ran and where an automation stands. */
export function registerRunReads({ program, opts, run }: ProgramKit): void {
  program
    .command('history <automationId>')
    .description('runs, newest first')
    .action(
      run(async (id: string) =>
        withEngine(opts(), async (engine) =>
          report(await engine.commands.handle(envelope('run.history.v1', { automationId: id })), opts(), historyTable),
        ),
      ),
    );
  program
    .command('health <automationId>')
    .description('where an automation stands')
    .action(
      run(async (id: string) =>
        withEngine(opts(), async (engine) =>
          report(await engine.commands.handle(envelope('definition.health.v1', { automationId: id })), opts(), (r) => {
            const h = r.health as Record<string, unknown>;
            return Object.entries(h)
              .filter(([k]) => k !== 'liveOccurrences')
              .map(([k, v]) => `${k.padEnd(22)} ${JSON.stringify(v)}`)
              .join('\n');
          }),
        ),
      ),
    );
  program
    .command('events')
    .description('read the changefeed')
    .option('--stream <kind/id>', 'a stream, e.g. automation/daily-notes', 'feed/all')
    .option('--after <n>', 'cursor', '-1')
    .option('--follow', 'keep printing new events until interrupted')
    .action(
      run(async (cmd: { stream: string; after: string; follow?: boolean }) =>
        withEngine(opts(), async (engine) => readEvents(engine, cmd, opts())),
      ),
    );
}
