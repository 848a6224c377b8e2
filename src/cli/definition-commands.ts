import { DaemonClient } from '../daemon/client.js';
import { applyFile } from './apply-command.js';
import { CliError, envelope, openLocation, report, withEngine, type CliEngine } from './context.js';
import { errorLine } from './error-line.js';
import type { ProgramKit } from './program-kit.js';
import { storeLocation } from './store-location.js';

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
        const location = storeLocation(opts());
        const served = await DaemonClient.connect(location.anchor);
        if (served !== undefined)
          return console.log(`store ready: ${location.kind === 'file' ? location.file : location.shown}`);
        const store = await openLocation(location, opts());
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

/** get: reading a definition (list is in list-command.ts). */
export function registerDefinitionReads({ program, opts, run }: ProgramKit): void {
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
