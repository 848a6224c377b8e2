import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { conformanceResult, formatSuite } from '../testkit/invariants/report.js';
import { validateConformanceResult } from '../testkit/invariants/result-schema.js';
import { runSelfCheck } from '../testkit/invariants/self-check.js';
import { runInvariantSuite } from '../testkit/invariants/suite.js';
import type { StoreKind } from '../testkit/invariants/world.js';
import { packageRoot } from '../contract/package-root.js';

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
}

/** `coven-automata invariants`: runs the suite, prints the table, optionally writes the conformance result. */
export async function runInvariantsCommand(argv: string[]): Promise<number> {
  const runs = Number(option(argv, '--runs') ?? 100);
  const seed = Number(option(argv, '--seed') ?? Date.now() % 2 ** 31);
  const stores = (option(argv, '--stores') ?? 'memory,json,sqlite').split(',') as StoreKind[];
  if (
    !Number.isInteger(runs) ||
    runs < 1 ||
    !Number.isInteger(seed) ||
    stores.some((s) => s !== 'memory' && s !== 'json' && s !== 'sqlite')
  ) {
    console.error(
      'usage: coven-automata invariants [--runs N] [--seed S] [--stores memory,json,sqlite] ' +
        '[--no-self-check] [--result FILE] [--json]',
    );
    return 2;
  }
  const progress = (message: string) => process.stderr.write(`… ${message}\n`);
  progress(`seed ${seed} (replay with --seed ${seed}), ${runs} engine runs per store`);
  const result = await runInvariantSuite({
    runs,
    seed,
    stores,
    machineRuns: Math.max(100, runs),
    onProgress: progress,
  });
  const selfCheck = argv.includes('--no-self-check') ? undefined : await runSelfCheck(progress);
  const file = option(argv, '--result');
  if (file !== undefined) {
    const envelope = conformanceResult(result, selfCheck, new Date());
    const problems = validateConformanceResult(
      envelope,
      resolve(process.env.COVEN_UPSTREAM_DIR ?? join(packageRoot(), '..', 'shared', 'upstream')),
    );
    if (problems === undefined) progress('upstream conformance-result schema not found: the result was not validated');
    else if (problems.length > 0) {
      console.error(`the conformance result does not validate:\n  ${problems.join('\n  ')}`);
      return 1;
    } else progress("the conformance result validates against upstream's conformance-result.schema.json");
    writeFileSync(file, `${JSON.stringify(envelope, null, 2)}\n`);
    progress(`wrote ${file}`);
  }
  console.log(
    argv.includes('--json') ? JSON.stringify({ ...result, selfCheck }, null, 2) : formatSuite(result, selfCheck),
  );
  return result.passed && (selfCheck ?? []).every((r) => r.status === 'caught') ? 0 : 1;
}
