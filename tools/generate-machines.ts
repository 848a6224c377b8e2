// Turns spec/coven-automations/v1/state-machines.json (the contract) and spec/coven-automata/v1/extension-machines.json
// (this project's own extension machines) into the XState machines under machines/.
// `--check` writes nothing and exits 1 when any generated file differs from what the spec produces.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadExtensionSpec, type ExtensionSpec } from '../src/spec/extension-spec.js';
import { loadLifecycleSpec, SpecFileError, type LifecycleSpec } from '../src/spec/lifecycle-spec.js';
import { packageRoot } from '../src/contract/package-root.js';
import { extensionSpecProblems, specProblems } from '../src/spec/soundness.js';
import { renderMachineFiles } from './machine-codegen.js';

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const root = packageRoot();
  let spec: LifecycleSpec;
  let extension: ExtensionSpec;
  try {
    spec = loadLifecycleSpec();
    extension = loadExtensionSpec();
  } catch (error) {
    if (error instanceof SpecFileError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
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
      console.log(`wrote ${file}`);
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
