import { resolve } from 'node:path';
import { DaemonClient } from '../daemon/client.js';
import { openStore } from '../store/open-store.js';
import { applyFile } from './apply-command.js';
import { CliError, DEFAULT_STORE, envelope, report, withEngine, type CliEngine } from './context.js';
import { errorLine } from './error-line.js';
import { paint, table } from './format.js';
import type { ProgramKit } from './program-kit.js';

async function revisionOf(engine: CliEngine, automationId: string): Promise<number> {
  const got = await engine.commands.handle(envelope('definition.get.v1', { automationId }));
  if (got.outcome === 'rejected') throw new CliError(errorLine(got.error!));
  return got.result!.currentRevision as number;
}

/** init, apply and the lifecycle commands (activate, pause, disable, enable, tombstone). */
export function registerDefinitionCommands({ program, opts, run }: ProgramKit): void {
  program
    .command('init')
    .description('create the store file')
    .action(
      run(async () => {
        // A store a daemon serves exists and is ready; opening it here would only meet the daemon's lock.
        const served = await DaemonClient.connect(opts().store ?? DEFAULT_STORE);
        if (served !== undefined) return console.log(`store ready: ${resolve(opts().store ?? DEFAULT_STORE)}`);
        const store = await openStore(opts().store ?? DEFAULT_STORE, opts().storeKind);
        await store.transact((tx) => tx.head('init'));
        await store.close();
        console.log(`store ready: ${store.file}`);
      }),
    );
  program
    .command('apply')
    .description('create or revise a definition (rich contract form), or import flat legacy definitions')
    .requiredOption('-f, --file <file>', 'definition JSON')
    .action(
      run(async (cmd: { file: string }) => withEngine(opts(), async (engine) => applyFile(engine, cmd.file, opts()))),
    );
  for (const [name, command] of [
    ['activate', 'definition.activate.v1'],
    ['pause', 'definition.pause.v1'],
    ['disable', 'definition.disable.v1'],
    ['enable', 'x-coven-automata.definition.reenable.v1'],
    ['tombstone', 'definition.tombstone.v1'],
  ] as const) {
    program
      .command(`${name} <automationId>`)
      .description(`${command}`)
      .option('--reason <text>', 'why')
      .action(
        run(async (id: string, cmd: { reason?: string }) =>
          withEngine(opts(), async (engine) =>
            report(
              await engine.commands.handle(
                envelope(
                  command,
                  { automationId: id, ...(cmd.reason === undefined ? {} : { reason: cmd.reason }) },
                  await revisionOf(engine, id),
                ),
              ),
              opts(),
              (r) => `${id}: ${String(r.lifecycleState)} (revision ${String(r.revision)})`,
            ),
          ),
        ),
      );
  }
}

/** list and get: reading definitions. */
export function registerDefinitionReads({ program, opts, run }: ProgramKit): void {
  program
    .command('list')
    .description('list definitions')
    .option('--all', 'include tombstoned')
    .action(
      run(async (cmd: { all?: boolean }) =>
        withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(
              envelope('definition.list.v1', cmd.all === true ? { lifecycleState: 'all' } : {}),
            ),
            opts(),
            (r) =>
              table(
                ['automation', 'name', 'state', 'revision'],
                (r.definitions as Array<Record<string, unknown>>).map((d) => [
                  String(d.automationId),
                  String(d.name),
                  paint(String(d.lifecycleState), String(d.lifecycleState)),
                  String(d.revision),
                ]),
              ),
          ),
        ),
      ),
    );
  program
    .command('get <automationId>')
    .option('--revision <n>', 'a historic revision')
    .description('show a definition')
    .action(
      run(async (id: string, cmd: { revision?: string }) =>
        withEngine(opts(), async (engine) =>
          report(
            await engine.commands.handle(
              envelope('definition.get.v1', {
                automationId: id,
                ...(cmd.revision === undefined ? {} : { revision: Number(cmd.revision) }),
              }),
            ),
            opts(),
            (r) => JSON.stringify(r, null, 2),
          ),
        ),
      ),
    );
}
