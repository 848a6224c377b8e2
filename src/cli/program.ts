import { join } from 'node:path';
import { Command, Option } from 'commander';
import { verifyIntegrity } from '../contract/digest.js';
import { isContractError } from '../contract/errors.js';
import { formatReports } from '../conformance/report-format.js';
import { runVector } from '../conformance/vector-runner.js';
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { summarizeSpec } from '../spec/summary.js';
import { openStore } from '../store/open-store.js';
import type { Engine } from '../engine/engine.js';
import { applyFile, readJsonFile } from './apply-command.js';
import { CliError, collect, DEFAULT_STORE, envelope, report, withEngine, type CliOptions } from './context.js';
import { errorLine } from './error-line.js';
import { runDemo } from './demo.js';
import { paint, table } from './format.js';
import { historyTable } from './history-format.js';
import { runInvariantsCommand } from './invariants-command.js';
import { renderDiagrams } from './diagram-command.js';
import { runInspect } from './inspect-command.js';
import { runLifecycleWalkthrough } from './lifecycle-walkthrough.js';

async function revisionOf(engine: Engine, automationId: string): Promise<number> {
  const got = await engine.commands.handle(envelope('definition.get.v1', { automationId }));
  if (got.outcome === 'rejected') throw new CliError(errorLine(got.error!));
  return got.result!.currentRevision as number;
}

/** The `coven-automata` command line. */
export function buildProgram(): Command {
  const program = new Command('coven-automata')
    .description('An XState orchestration engine for the coven.automations.v1 contract')
    .option('--store <file>', 'the store file (.sqlite/.sqlite3/.db selects SQLite, anything else JSON)', DEFAULT_STORE)
    .addOption(
      new Option('--store-kind <kind>', 'force the store implementation regardless of the extension').choices([
        'json',
        'sqlite',
      ]),
    )
    .option('--json', 'machine-readable output')
    .option('--command <shell>', 'what the child-process runtime runs per attempt (reads $COVEN_PROMPT)')
    .option(
      '--cwd-root <dir>',
      "a folder sessions may run in, repeatable (default: the store's folder); activation refuses a cwd outside every root",
      collect,
    )
    .option(
      '--pass-env <name>',
      'an engine environment variable children receive beyond the allowlist, repeatable',
      collect,
    )
    .option(
      '--retention <spec>',
      'how long settled history is kept: off, or <class>=<days|never>[,...] (default ephemeral=1,standard=30,extended=365)',
    )
    .showHelpAfterError();
  const opts = (): CliOptions => program.opts<CliOptions>();
  const run =
    <A extends unknown[]>(handler: (...args: A) => Promise<number | void>) =>
    async (...args: A) => {
      process.exitCode = (await handler(...args)) ?? 0;
    };
  const simple = (
    name: string,
    command: string,
    describe: string,
    field: string,
    extra?: (engine: Engine, id: string) => Promise<Record<string, unknown>>,
  ) =>
    program
      .command(`${name} <${field}>`)
      .description(describe)
      .action(
        run(async (id: string) =>
          withEngine(opts(), async (engine) =>
            report(
              await engine.commands.handle(
                envelope(command, { [field]: id, ...(extra === undefined ? {} : await extra(engine, id)) }),
              ),
              opts(),
            ),
          ),
        ),
      );

  program
    .command('init')
    .description('create the store file')
    .action(
      run(async () => {
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
        withEngine(opts(), async (engine) => {
          const history = await engine.services.store.read((r) =>
            r.get<{ attributes: { attemptIds: string[] } }>('run', runId),
          );
          const latest =
            history === undefined
              ? undefined
              : await engine.services.store.read((r) =>
                  r.get<{ snapshot: { value: string; context: { attemptNumber: number } } }>(
                    'attempt',
                    history.data.attributes.attemptIds.at(-1)!,
                  ),
                );
          return report(
            await engine.commands.handle(
              envelope('attempt.retry.v1', {
                runId,
                priorAttemptNumber: latest?.data.snapshot.context.attemptNumber ?? 1,
                priorDisposition: latest?.data.snapshot.value ?? 'failed',
              }),
            ),
            opts(),
          );
        }),
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
        withEngine(opts(), async (engine) => {
          const [kind, ...rest] = cmd.stream.split('/');
          const stream = { kind: kind as 'feed', id: rest.join('/') };
          const print = (e: {
            sequence: number;
            kind: string;
            stream: { kind: string; id: string };
            summary: string;
          }) =>
            console.log(
              opts().json === true
                ? JSON.stringify(e)
                : `${String(e.sequence).padStart(4)} ${e.stream.kind}/${e.stream.id} ${e.kind}: ${e.summary}`,
            );
          if (cmd.follow !== true) {
            return report(
              await engine.commands.handle(
                envelope('events.read.v1', { stream, after: Number(cmd.after), limit: 1000 }),
              ),
              opts(),
              (r) =>
                (r.events as Parameters<typeof print>[0][])
                  .map(
                    (e) => `${String(e.sequence).padStart(4)} ${e.stream.kind}/${e.stream.id} ${e.kind}: ${e.summary}`,
                  )
                  .join('\n'),
            );
          }
          const controller = new AbortController();
          process.once('SIGINT', () => controller.abort());
          process.once('SIGTERM', () => controller.abort());
          for await (const e of engine.commands.subscribe(stream, {
            after: Number(cmd.after),
            signal: controller.signal,
          }))
            print(e);
          return 0;
        }),
      ),
    );
  program
    .command('start')
    .description('run the engine with the child-process runtime until SIGINT/SIGTERM')
    .action(
      run(async () =>
        withEngine(opts(), async (engine, store) => {
          console.log(`engine running on ${store.file} (Ctrl-C to stop)`);
          engine.start((pass) => {
            if (pass.planned + pass.launched + pass.settled > 0 || pass.errors.length > 0) {
              console.log(
                `${pass.at} planned ${pass.planned}, launched ${pass.launched}, settled ${pass.settled}${pass.errors.length > 0 ? `, errors: ${pass.errors.map((e) => e.message).join('; ')}` : ''}`,
              );
            }
          });
          await new Promise<void>((resolve) => {
            process.once('SIGINT', resolve);
            process.once('SIGTERM', resolve);
          });
          await engine.stop();
          console.log('stopped; store lock released');
          return 0;
        }),
      ),
    );
  program
    .command('demo')
    .description('the four-day demo on a fresh store (default .coven/demo.json; a .sqlite file runs it on SQLite)')
    .option('--file <file>', 'demo store', join('.coven', 'demo.json'))
    .action(
      run(async (cmd: { file: string }) => {
        const { receipts, verified } = await runDemo(cmd.file, (...lines) => console.log(lines.join('\n')));
        return receipts === verified ? 0 : 1;
      }),
    );
  program
    .command('walkthrough')
    .description('one automation through the four machines with persistent actors')
    .option('--file <file>', 'store', join('.coven', 'walkthrough.json'))
    .action(
      run(async (cmd: { file: string }) =>
        runLifecycleWalkthrough(cmd.file, (...lines) => console.log(lines.join('\n'))),
      ),
    );
  program
    .command('machines')
    .description('the four machines, their static proofs and the ten invariants')
    .action(run(async () => console.log(summarizeSpec(loadLifecycleSpec()))));
  program
    .command('invariants')
    .description('run the invariant property suite (see --help-invariants in the README)')
    .allowUnknownOption()
    .helpOption(false)
    .argument('[args...]')
    .action(run(async (args: string[]) => runInvariantsCommand(args ?? [])));
  program
    .command('conformance')
    .description('conformance vectors')
    .command('run <files...>')
    .description('run conformance.vector.v1 files against a fresh engine each')
    .action(
      run(async (files: string[]) => {
        const reports = [];
        for (const file of files) reports.push(await runVector(file));
        console.log(opts().json === true ? JSON.stringify(reports, null, 2) : formatReports(reports));
        return reports.some((r) => r.status === 'fail') ? 1 : 0;
      }),
    );
  program
    .command('diagram')
    .description('render the machines as Mermaid and SVG')
    .option('--out <dir>', 'where SVGs go', 'docs')
    .option('--check', 'exit 1 if the README or docs/ are stale')
    .action(run(async (cmd: { out: string; check?: boolean }) => renderDiagrams(cmd.out, cmd.check === true)));
  program
    .command('inspect')
    .description('run the demo with the Stately inspector (WebSocket relay on loopback)')
    .option('--port <n>', 'relay port', '8787')
    .option('--no-wait', 'do not wait for the inspector UI')
    .action(run(async (cmd: { port: string; wait: boolean }) => runInspect(Number(cmd.port), cmd.wait)));
  program
    .command('verify <file>')
    .description('recompute and check the JCS SHA-256 integrity of a receipt or definition')
    .action(
      run(async (file: string) => {
        const object = readJsonFile(file) as Record<string, unknown>;
        const verdict = verifyIntegrity(object);
        if (opts().json === true) console.log(JSON.stringify(verdict));
        else
          console.log(
            verdict.valid
              ? `valid: ${verdict.actual}`
              : `INVALID: carried ${String(verdict.expected)}, computed ${verdict.actual}`,
          );
        return verdict.valid ? 0 : 1;
      }),
    );
  return program;
}

/**
 * Runs the CLI; user errors print one line (code, status, explanation and the fields that failed) and exit 1,
 * never a stack trace. With --json a typed error is printed as its error envelope instead.
 */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (isContractError(error)) {
      if (program.opts<CliOptions>().json === true)
        console.log(JSON.stringify({ outcome: 'rejected', error: error.toEnvelope() }, null, 2));
      else console.error(errorLine(error.toEnvelope()));
    } else if (error instanceof CliError) console.error(error.message);
    else console.error(`internal error: ${(error as Error)?.message ?? String(error)}`);
    process.exitCode = 1;
  }
}
