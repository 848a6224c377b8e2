#!/usr/bin/env node
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { summarizeSpec } from '../spec/summary.js';

const USAGE = `usage: coven-automata <command>

commands:
  machines   print the four contract machines, their static proofs and the ten invariants`;

function main(argv: string[]): number {
  const [command = 'machines'] = argv;
  switch (command) {
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

process.exitCode = main(process.argv.slice(2));
