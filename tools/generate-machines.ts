// Turns spec/coven-automations/v1/state-machines.json (the contract) and spec/coven-automata/v1/extension-machines.json
// (this project's own extension machines) into the XState machines under machines/.
// `--check` writes nothing and exits 1 when any generated file differs from what the spec produces.
// `--spec FILE` and `--extension FILE` read other spec files; `--out DIR` writes machines/ under DIR instead of the
// package root (the generated files import the guard catalogue by a path relative to the package root).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadExtensionSpec, type ExtensionSpec } from '../src/spec/extension-spec.js';
import { loadLifecycleSpec, SpecFileError, type LifecycleSpec } from '../src/spec/lifecycle-spec.js';
import { packageRoot } from '../src/contract/package-root.js';
import { extensionSpecProblems, specProblems } from '../src/spec/soundness.js';
import { renderMachineFiles } from './machine-codegen.js';

interface Arguments {
  check: boolean;
  spec?: string;
  extension?: string;
  out?: string;
}

function parseArguments(argv: string[]): Arguments | string {
  const parsed: Arguments = { check: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--check') parsed.check = true;
    else if (flag === '--spec' || flag === '--extension' || flag === '--out') {
      const value = argv[++i];
      if (value === undefined || value.startsWith('--')) return `${flag} needs a path`;
      parsed[flag.slice(2) as 'spec' | 'extension' | 'out'] = resolve(value);
    } else return `unknown option '${flag}' (takes --check, --spec FILE, --extension FILE, --out DIR)`;
  }
  return parsed;
}

function loadSpecs(args: Arguments): { spec: LifecycleSpec; extension: ExtensionSpec } | undefined {
  try {
    return { spec: loadLifecycleSpec(args.spec), extension: loadExtensionSpec(args.extension) };
  } catch (error) {
    const unreadable = (error as NodeJS.ErrnoException).code !== undefined;
    if (!(error instanceof SpecFileError) && !unreadable) throw error;
    console.error((error as Error).message);
    return undefined;
  }
}

function main(argv: string[]): number {
  const args = parseArguments(argv);
  if (typeof args === 'string') {
    console.error(args);
    return 1;
  }
  const check = args.check;
  const root = args.out ?? packageRoot();
  const loaded = loadSpecs(args);
  if (loaded === undefined) return 1;
  const { spec, extension } = loaded;
  const problems = specProblems(spec);
  if (problems.length > 0) {
    console.error(`the lifecycle spec is unsound; refusing to generate:\n  ${problems.join('\n  ')}`);
    return 1;
  }
  const extensionProblems = extensionSpecProblems(extension, spec);
  if (extensionProblems.length > 0) {
    console.error(`the extension spec is unsound; refusing to generate:\n  ${extensionProblems.join('\n  ')}`);
    return 1;
  }
  const stale: string[] = [];
  for (const [file, content] of renderMachineFiles(spec, extension)) {
    const path = join(root, file);
    const current = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    if (current === content) continue;
    if (check) {
      stale.push(file);
    } else {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      console.log(`wrote ${args.out === undefined ? file : path}`);
    }
  }
  if (check && stale.length > 0) {
    console.error(`generated files are stale (run \`npm run generate\`):\n  ${stale.join('\n  ')}`);
    return 1;
  }
  if (check) console.log('generated machines match the spec');
  return 0;
}

process.exitCode = main(process.argv.slice(2));
