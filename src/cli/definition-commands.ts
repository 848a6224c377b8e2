import { DaemonClient } from '../daemon/client.js';
import { alreadyDone, alreadyDoneLine } from '../domain/lifecycle-done.js';
import { existsSync } from 'node:fs';
import { applyFile, rehearseApply } from './apply-command.js';
import { CliError, envelope, openLocation, report, withEngine, type CliEngine, type CliOptions } from './context.js';
import { errorLine } from './error-line.js';
import type { ProgramKit } from './program-kit.js';
import { storeLocation } from './store-location.js';

/** Where a definition stands, as `definition.get.v1` answers; a tombstoned one reads as such. */
async function standing(engine: CliEngine, automationId: string): Promise<{ state: string; revision: number }> {
  const got = await engine.commands.handle(envelope('definition.get.v1', { automationId }));
  if (got.outcome === 'rejected') {
    if (got.error!.code === 'GONE_TOMBSTONED')
      return { state: 'tombstoned', revision: got.error!.currentRevision ?? 0 };
    throw new CliError(errorLine(got.error!));
  }
  return { state: String(got.result!.lifecycleState), revision: got.result!.currentRevision as number };
}

/** The lifecycle commands: name, contract command, what it does (where each is already done: lifecycle-done). */
const LIFECYCLE = [
  ['activate', 'definition.activate.v1', 'schedule a paused definition (paused → active)'],
  ['pause', 'definition.pause.v1', 'stop scheduling an active definition (active → paused)'],
  ['disable', 'definition.disable.v1', 'take a definition out of service until `enable`'],
  [
    'enable',
    'x-coven-automata.definition.reenable.v1',
    're-enable a disabled definition (disabled → paused; `activate` schedules it)',
  ],
  ['tombstone', 'definition.tombstone.v1', 'delete a definition for good (its history is kept)'],
] as const;

/**
 * One lifecycle command at the definition's current revision. A definition already where the command would
 * put it is done, not refused: the CLI says so and exits 0, committing nothing (the command API itself keeps
 * the contract's ILLEGAL_TRANSITION).
 */
async function lifecycle(
  engine: CliEngine,
  [, command]: (typeof LIFECYCLE)[number],
  id: string,
  reason: string | undefined,
  options: CliOptions,
): Promise<number> {
  const { state, revision } = await standing(engine, id);
  if (alreadyDone(command, state)) {
    if (options.json === true)
      console.log(JSON.stringify({ automationId: id, lifecycleState: state, revision, changed: false }, null, 2));
    else console.log(alreadyDoneLine(id, command, state, revision));
    return 0;
  }
  const payload = { automationId: id, ...(reason === undefined ? {} : { reason }) };
  return report(
    await engine.commands.handle(envelope(command, payload, revision)),
    options,
    (r) => `${id}: ${String(r.lifecycleState)} (revision ${String(r.revision)})`,
  );
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
      run(async (cmd: { file: string }) => {
        // A store is made by the first apply that commits something, never by one that fails.
        const location = storeLocation(opts());
        if (location.kind === 'file' && !existsSync(location.file)) {
          const refused = await rehearseApply(cmd.file, opts());
          if (refused !== undefined) return refused;
        }
        return withEngine(opts(), async (engine) => applyFile(engine, cmd.file, opts()));
      }),
    );
  for (const entry of LIFECYCLE) {
    program
      .command(`${entry[0]} <automationId>`)
      .description(entry[2])
      .option('--reason <text>', 'why (kept with the revision)')
      .action(
        run(async (id: string, cmd: { reason?: string }) =>
          withEngine(opts(), async (engine) => lifecycle(engine, entry, id, cmd.reason, opts())),
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
