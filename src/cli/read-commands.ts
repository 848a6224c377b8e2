import type { Engine } from '../engine/engine.js';
import { envelope, report, withEngine, type CliOptions } from './context.js';
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

/** `events`: one page of a stream, or with --follow every new event until SIGINT/SIGTERM. */
async function readEvents(
  engine: Engine,
  cmd: { stream: string; after: string; follow?: boolean },
  opts: CliOptions,
): Promise<number> {
  const [kind, ...rest] = cmd.stream.split('/');
  const stream = { kind: kind as 'feed', id: rest.join('/') };
  if (cmd.follow !== true) {
    return report(
      await engine.commands.handle(envelope('events.read.v1', { stream, after: Number(cmd.after), limit: 1000 })),
      opts,
      (r) => (r.events as PrintedEvent[]).map(eventLine).join('\n'),
    );
  }
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  for await (const e of engine.commands.subscribe(stream, { after: Number(cmd.after), signal: controller.signal }))
    console.log(opts.json === true ? JSON.stringify(e) : eventLine(e));
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
