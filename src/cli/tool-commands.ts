import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifyIntegrity } from '../contract/digest.js';
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { summarizeSpec } from '../spec/summary.js';
import { readJsonFile } from './apply-command.js';
import { runDemo } from './demo.js';
import { runLifecycleWalkthrough } from './lifecycle-walkthrough.js';
import type { InvariantsOptions } from './invariants-command.js';
import type { ProgramKit } from './program-kit.js';
import type { FileReport } from '../testkit/conformance/corpus.js';
import { declareStartOptions, runStart, type StartOptions } from './start-command.js';

const INVARIANTS_HELP = `
What runs, in order:
  1. the spec on disk: its schema, its static proofs, the structural properties of every invariant
     (spec/coven-automata/v1/invariant-rules.json) and whether machines/ was generated from it;
     if any fails, nothing else runs and nothing is proven
  2. machine-level properties: @xstate/graph walks of the generated machines that evaluate guards
  3. the engine-level property on each store kind, with retention, and two engines interleaved
  4. the self-check: broken engines and planted spec edits, each caught by its invariant by name

Exit status: 0 when every invariant holds and the self-check catches every variant; 1 otherwise
(a violated invariant, a missed variant, a spec that failed its checks, or a bad option).
With the global --json the result is printed as JSON (put --json before or after the subcommand).

Examples:
  coven-automata invariants --runs 300 --seed 42
  coven-automata invariants --spec my-edit.json --no-self-check
  coven-automata --json invariants --runs 20 > result.json
`;

/**
 * start, demo, walkthrough, machines and invariants: running the engine and its showcases. The invariant suite
 * is imported when its command runs, so every other command starts without fast-check and @xstate/graph.
 */
export function registerRunCommands({ program, opts, run }: ProgramKit): void {
  declareStartOptions(
    program
      .command('start')
      .description('run the engine and serve every command on a socket beside the store, until SIGINT/SIGTERM'),
  ).action(run(async (cmd: StartOptions) => runStart(opts(), cmd)));
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
    .description(
      'prove the ten invariants: the spec on disk, then machine- and engine-level properties, then a self-check',
    )
    .option('--runs <n>', 'engine-level property runs per store kind', '100')
    .option('--seed <n>', 'the fast-check seed (default: from the clock; always printed, so a run can be replayed)')
    .option(
      '--stores <kinds>',
      'store kinds for the engine-level property, comma-separated (memory, json, sqlite, postgres)',
      'memory,json,sqlite',
    )
    .option('--postgres-url <url>', 'the database the postgres store kind runs on (a scratch schema per run)')
    .option('--no-self-check', 'skip the self-check (broken engines and planted spec edits that must be caught)')
    .option('--result <file>', 'also write a coven.automations.conformance-result.v1 envelope to this file')
    .option('--spec <file>', "check this lifecycle spec file instead of the package's state-machines.json")
    .addHelpText('after', INVARIANTS_HELP)
    .action(
      run(async (cmd: Omit<InvariantsOptions, 'json'>) =>
        (await import('./invariants-command.js')).runInvariantsCommand({ ...cmd, json: opts().json === true }),
      ),
    );
}

/** Writes the corpus run as a conformance-result envelope, checked against upstream's schema when it is present. */
async function writeCorpusResult(reports: FileReport[], file: string): Promise<void> {
  const { upstreamDirectory } = await import('../testkit/conformance/corpus.js');
  const { corpusConformanceResult } = await import('../testkit/conformance/result-envelope.js');
  const { validateConformanceResult } = await import('../testkit/invariants/result-schema.js');
  const envelope = corpusConformanceResult(reports, upstreamDirectory(), new Date());
  const problems = validateConformanceResult(envelope, upstreamDirectory());
  if (problems !== undefined && problems.length > 0)
    throw new Error(`the conformance result does not match upstream's schema: ${problems.join('; ')}`);
  writeFileSync(file, `${JSON.stringify(envelope, null, 2)}\n`);
  const { overallStatus } = envelope.statement as { overallStatus: string };
  console.error(`conformance result written to ${file} (overall ${overallStatus})`);
}

/** `conformance run [files...]`: the upstream corpus (or the files named), a summary line, exit 1 on fail or crash. */
function registerConformanceCommand({ program, opts, run }: ProgramKit): void {
  program
    .command('conformance')
    .description('conformance vectors')
    .command('run [files...]')
    .description(
      'run conformance files (vectors, scenarios, runner suites) against a fresh engine each; with no files, the ' +
        'whole corpus under the upstream folder (COVEN_UPSTREAM_DIR, or ../shared/upstream)',
    )
    .option('--result <file>', 'also write a coven.automations.conformance-result.v1 envelope to this file')
    .action(
      run(async (files: string[], cmd: { result?: string }) => {
        const corpus = await import('../testkit/conformance/corpus.js');
        const { formatFileReports } = await import('../testkit/conformance/report-format.js');
        const chosen = files.length > 0 ? files : corpus.findCorpus();
        if (chosen.length === 0) {
          console.error(`no conformance files found under ${corpus.upstreamDirectory()}/conformance`);
          return 1;
        }
        const reports = [];
        for (const file of chosen) reports.push(await corpus.runFile(file));
        console.log(opts().json === true ? JSON.stringify(reports, null, 2) : formatFileReports(reports));
        if (cmd.result !== undefined) await writeCorpusResult(reports, cmd.result);
        return reports.some((r) => r.status === 'fail' || r.status === 'crash') ? 1 : 0;
      }),
    );
}

/**
 * conformance, diagram, inspect and verify: checking the engine, its diagrams and its receipts. The runner, the
 * renderer and the inspector are imported when their command runs (the last two are optional packages).
 */
export function registerCheckCommands(kit: ProgramKit): void {
  const { program, opts, run } = kit;
  registerConformanceCommand(kit);
  program
    .command('diagram')
    .description('render the machines as Mermaid and SVG')
    .option('--out <dir>', 'where SVGs go', 'docs')
    .option('--check', 'exit 1 if docs/machines.md or docs/*.svg are stale')
    .action(
      run(async (cmd: { out: string; check?: boolean }) =>
        (await import('./diagram-command.js')).renderDiagrams(cmd.out, cmd.check === true),
      ),
    );
  program
    .command('inspect')
    .description('run the demo with the Stately inspector (WebSocket relay on loopback)')
    .option('--port <n>', 'relay port', '8787')
    .option('--no-wait', 'do not wait for the inspector UI')
    .action(
      run(async (cmd: { port: string; wait: boolean }) =>
        (await import('./inspect-command.js')).runInspect(Number(cmd.port), cmd.wait),
      ),
    );
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
}
