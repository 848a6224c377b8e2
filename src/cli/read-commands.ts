import { parseStream } from '../daemon/follow.js';
import { envelope, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import { historyTable } from './history-format.js';
import type { ProgramKit } from './program-kit.js';

interface PrintedEvent {
  sequence: number;
  kind: string;
  stream: { kind: string; id: string };
  summary: string;
}

const eventLine = (e: PrintedEvent) =>
  `${String(e.sequence).padStart(4)} ${e.stream.kind}/${e.stream.id} ${e.kind}: ${e.summary}`;

/**
 * `events`: one page of a stream, or with --follow every event after the cursor and then each new one as it
 * commits (from the daemon's stream, or the store this process opened) until SIGINT/SIGTERM. Every line, paged
 * or followed, starts with the cursor `--after` takes: the global position on the feed, the sequence on a stream.
 */
async function readEvents(
  engine: CliEngine,
  cmd: { stream: string; after: string; follow?: boolean },
  opts: CliOptions,
): Promise<number> {
  const stream = parseStream(cmd.stream);
  if (cmd.follow !== true) {
    // The same cursor --follow prints: the page's global positions on the feed, the sequence on a stream.
    const cursorOf = (r: Record<string, unknown>, e: PrintedEvent, i: number) =>
      stream.kind === 'feed' ? (r.positions as number[])[i]! : e.sequence;
    return report(
      await engine.commands.handle(envelope('events.read.v1', { stream, after: Number(cmd.after), limit: 1000 })),
      opts,
      (r) => (r.events as PrintedEvent[]).map((e, i) => eventLine({ ...e, sequence: cursorOf(r, e, i) })).join('\n'),
    );
  }
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  for await (const { position, event } of engine.follow(stream, {
    after: Number(cmd.after),
    signal: controller.signal,
  }))
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
