#!/usr/bin/env node
import { join } from 'node:path';
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { summarizeSpec } from '../spec/summary.js';
import { isContractError } from '../contract/errors.js';
import { runVector } from '../conformance/vector-runner.js';
import { formatReports } from '../conformance/report-format.js';
import { runLifecycleWalkthrough } from './lifecycle-walkthrough.js';
import { runInvariantsCommand } from './invariants-command.js';

const USAGE = `usage: coven-automata <command>

commands:
  walkthrough [--store FILE]          drive one automation through the four machines on a fresh JSON store
                                      (default .coven/walkthrough.json), then reopen it and show what was restored
  machines                            print the four contract machines, their static proofs and the ten invariants
  conformance run [--json] FILE...    run conformance.vector.v1 files (upstream's scenarios and vectors) against
                                      a fresh engine each, with a simulated clock and runtime; exit 1 on any failure
  invariants [--runs N] [--seed S] [--stores memory,json] [--no-self-check] [--result FILE] [--json]
                                      run the invariant property suite: the ten contract invariants and the conformance
                                      gates at machine and engine level, then the broken-variant self-check; --result
                                      writes a coven.automations.conformance-result.v1 envelope; exit 1 on any violation`;

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
}

async function main(argv: string[]): Promise<number> {
  const [command = 'walkthrough', ...rest] = argv;
  switch (command) {
    case 'walkthrough':
      await runLifecycleWalkthrough(option(argv, '--store') ?? join('.coven', 'walkthrough.json'), (...lines) => console.log(lines.join('\n')));
      return 0;
    case 'machines':
      console.log(summarizeSpec(loadLifecycleSpec()));
      return 0;
    case 'conformance': {
      const [sub, ...args] = rest;
      const files = args.filter((a) => a !== '--json');
      if (sub !== 'run' || files.length === 0) {
        console.error(USAGE);
        return 2;
      }
      const reports = [];
      for (const file of files) reports.push(await runVector(file));
      console.log(args.includes('--json') ? JSON.stringify(reports, null, 2) : formatReports(reports));
      return reports.some((r) => r.status === 'fail') ? 1 : 0;
    }
    case 'invariants':
      return runInvariantsCommand(rest);
    case 'help':
    case '--help':
      console.log(USAGE);
      return 0;
    default:
      console.error(`unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (isContractError(error)) {
      console.error(`${error.code} (${error.httpStatus}): ${error.message}`);
    } else {
      console.error(error instanceof Error ? error.message : error);
    }
    process.exitCode = 1;
  },
);
