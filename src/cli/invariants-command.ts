import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { conformanceResult, formatSuite } from '../testkit/invariants/report.js';
import { validateConformanceResult } from '../testkit/invariants/result-schema.js';
import { runSelfCheck } from '../testkit/invariants/self-check.js';
import { runInvariantSuite } from '../testkit/invariants/suite.js';
import type { StoreKind } from '../testkit/invariants/world.js';
import { packageRoot } from '../contract/package-root.js';
import { CliError } from './context.js';

/** The options `coven-automata invariants` parses (see its `--help`). */
export interface InvariantsOptions {
  runs: string;
  seed?: string;
  stores: string;
  postgresUrl?: string;
  selfCheck: boolean;
  result?: string;
  spec?: string;
  json: boolean;
}

const STORE_KINDS: readonly StoreKind[] = ['memory', 'json', 'sqlite', 'postgres'];

function parsed(options: InvariantsOptions): { runs: number; seed: number; stores: StoreKind[] } {
  const runs = Number(options.runs);
  const seed = options.seed === undefined ? Date.now() % 2 ** 31 : Number(options.seed);
  const stores = options.stores.split(',') as StoreKind[];
  if (!Number.isInteger(runs) || runs < 1)
    throw new CliError(`--runs must be a positive integer, not '${options.runs}'`);
  if (!Number.isInteger(seed)) throw new CliError(`--seed must be an integer, not '${options.seed ?? ''}'`);
  const unknown = stores.filter((s) => !STORE_KINDS.includes(s));
  if (unknown.length > 0)
    throw new CliError(`--stores takes ${STORE_KINDS.join(', ')}; unknown: ${unknown.join(', ')}`);
  if (stores.includes('postgres') && options.postgresUrl === undefined)
    throw new CliError('--stores postgres needs --postgres-url postgres://… (each run gets a scratch schema there)');
  return { runs, seed, stores };
}

function writeResult(file: string, envelope: Record<string, unknown>, progress: (m: string) => void): boolean {
  const upstream = resolve(process.env.COVEN_UPSTREAM_DIR ?? join(packageRoot(), '..', 'shared', 'upstream'));
  const problems = validateConformanceResult(envelope, upstream);
  if (problems === undefined) progress('upstream conformance-result schema not found: the result was not validated');
  else if (problems.length > 0) {
    console.error(`the conformance result does not validate:\n  ${problems.join('\n  ')}`);
    return false;
  } else progress("the conformance result validates against upstream's conformance-result.schema.json");
  writeFileSync(file, `${JSON.stringify(envelope, null, 2)}\n`);
  progress(`wrote ${file}`);
  return true;
}

/** `coven-automata invariants`: runs the suite, prints the table or JSON, optionally writes the conformance result. */
export async function runInvariantsCommand(options: InvariantsOptions): Promise<number> {
  const { runs, seed, stores } = parsed(options);
  const progress = (message: string) => process.stderr.write(`… ${message}\n`);
  progress(`seed ${seed} (replay with --seed ${seed}), ${runs} engine runs per store`);
  const result = await runInvariantSuite({
    runs,
    seed,
    stores,
    ...(options.postgresUrl === undefined ? {} : { postgresUrl: options.postgresUrl }),
    machineRuns: Math.max(100, runs),
    onProgress: progress,
    ...(options.spec === undefined ? {} : { spec: { specFile: resolve(options.spec) } }),
  });
  const specFailed = result.specChecks.some((c) => c.problems.length > 0);
  const selfCheck = !options.selfCheck || specFailed ? undefined : await runSelfCheck(progress);
  if (
    options.result !== undefined &&
    !writeResult(options.result, conformanceResult(result, selfCheck, new Date()), progress)
  )
    return 1;
  console.log(options.json ? JSON.stringify({ ...result, selfCheck }, null, 2) : formatSuite(result, selfCheck));
  return result.passed && (selfCheck ?? []).every((r) => r.status === 'caught') ? 0 : 1;
}
