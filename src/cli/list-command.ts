import type { CommandResponse } from '../command-handler/envelope.js';
import { envelope, report, withEngine, type CliEngine } from './context.js';
import { lastResultText } from './failure-format.js';
import { paint, table } from './format.js';
import type { ProgramKit } from './program-kit.js';

type Rendered = Record<string, unknown>;

/** What `list` shows beside each definition: when it runs next and how its latest run ended. */
interface Outlook {
  nextRun: string;
  lastResult: string;
}

/**
 * The next slot comes from definition.health.v1 (none unless active and not quarantined; a tombstoned
 * definition has no health, so none), the last result from run.history.v1's newest run.
 */
async function outlookOf(engine: CliEngine, automationId: string): Promise<Outlook> {
  const health = await engine.commands.handle(envelope('definition.health.v1', { automationId }));
  const history = await engine.commands.handle(envelope('run.history.v1', { automationId, limit: 1 }));
  const nextDueAt = health.outcome === 'rejected' ? null : (health.result!.health as Rendered).nextDueAt;
  const latest = history.outcome === 'rejected' ? undefined : (history.result!.runs as Rendered[])[0];
  return {
    nextRun: typeof nextDueAt === 'string' ? nextDueAt : '-',
    lastResult: latest === undefined ? '-' : lastResultText(latest),
  };
}

/** The `list` table: each definition's state and revision, when it runs next and how its last run ended. */
export function definitionsTable(result: Rendered, outlooks: ReadonlyMap<string, Outlook>): string {
  return table(
    ['automation', 'name', 'state', 'revision', 'next run', 'last result'],
    (result.definitions as Rendered[]).map((d) => [
      String(d.automationId),
      String(d.name),
      paint(String(d.lifecycleState), String(d.lifecycleState)),
      String(d.revision),
      outlooks.get(String(d.automationId))?.nextRun ?? '-',
      outlooks.get(String(d.automationId))?.lastResult ?? '-',
    ]),
  );
}

async function listDefinitions(
  engine: CliEngine,
  all: boolean,
  json: boolean,
): Promise<[CommandResponse, Map<string, Outlook>]> {
  const response = await engine.commands.handle(envelope('definition.list.v1', all ? { lifecycleState: 'all' } : {}));
  const outlooks = new Map<string, Outlook>();
  // --json prints the contract's definition.list.v1 response as it is; the outlook is for the table.
  if (response.outcome === 'rejected' || json) return [response, outlooks];
  for (const d of response.result!.definitions as Rendered[])
    outlooks.set(String(d.automationId), await outlookOf(engine, String(d.automationId)));
  return [response, outlooks];
}

/** `list [--all]`: the definitions, with when each runs next and how its last run ended. */
export function registerListCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('list')
    .description('list definitions, with the next scheduled run and the last run result')
    .option('--all', 'include tombstoned')
    .action(
      run(async (cmd: { all?: boolean }) =>
        withEngine(opts(), async (engine) => {
          const [response, outlooks] = await listDefinitions(engine, cmd.all === true, opts().json === true);
          return report(response, opts(), (r) => definitionsTable(r, outlooks));
        }),
      ),
    );
}
