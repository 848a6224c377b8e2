#!/usr/bin/env node
import { join } from 'node:path';
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { summarizeSpec } from '../spec/summary.js';
import { isContractError } from '../contract/errors.js';
import { runLifecycleWalkthrough } from './lifecycle-walkthrough.js';

const USAGE = `usage: coven-automata <command>

commands:
  walkthrough [--store FILE]  drive one automation through the four machines on a fresh JSON store
                              (default .coven/walkthrough.json), then reopen it and show what was restored
  machines                    print the four contract machines, their static proofs and the ten invariants`;

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
}

async function main(argv: string[]): Promise<number> {
  const [command = 'walkthrough'] = argv;
  switch (command) {
    case 'walkthrough':
      await runLifecycleWalkthrough(option(argv, '--store') ?? join('.coven', 'walkthrough.json'), (...lines) => console.log(lines.join('\n')));
      return 0;
    case 'machines':
      console.log(summarizeSpec(loadLifecycleSpec()));
      return 0;
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
      console.error(error);
    }
    process.exitCode = 1;
  },
);
