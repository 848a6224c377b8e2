import { join } from 'node:path';
import { GENERATED_FROM } from '../../../machines/index.js';
import { packageRoot } from '../../contract/package-root.js';
import { EXTENSION_SPEC_FILE, loadExtensionSpec } from '../../spec/extension-spec.js';
import { loadLifecycleSpec, SPEC_FILE, SpecFileError } from '../../spec/lifecycle-spec.js';
import { extensionSpecProblems, specProblems } from '../../spec/soundness.js';
import { generatedFromOf, type GeneratedFrom } from '../../spec/spec-digest.js';

/** One check the suite makes of the spec before it proves anything about the machines. */
export interface SpecCheck {
  check: string;
  problems: string[];
}

/** Which spec files to check, and the digests of what the machines were generated from (defaults: this package). */
export interface SpecOnDiskOptions {
  specFile?: string;
  extensionFile?: string;
  generatedFrom?: GeneratedFrom;
}

/**
 * The spec on disk, checked before any property runs: it parses and matches its schema, its static proofs hold,
 * and the generated machines were generated from it. A suite that skipped this would prove machines generated
 * from another spec — the one on disk before an edit the generator refused, say.
 */
export function checkSpecOnDisk(options: SpecOnDiskOptions = {}): SpecCheck[] {
  const specFile = options.specFile ?? join(packageRoot(), SPEC_FILE);
  const extensionFile = options.extensionFile ?? join(packageRoot(), EXTENSION_SPEC_FILE);
  let loaded;
  try {
    loaded = { spec: loadLifecycleSpec(specFile), extension: loadExtensionSpec(extensionFile) };
  } catch (error) {
    if (!(error instanceof SpecFileError)) throw error;
    return [{ check: 'the spec files parse and match their schemas', problems: [error.message] }];
  }
  const { spec, extension } = loaded;
  const soundness = [...specProblems(spec), ...extensionSpecProblems(extension, spec)];
  const expected = options.generatedFrom ?? GENERATED_FROM;
  const actual = generatedFromOf(spec, extension);
  const stale = [
    ...(actual.contractSpecSha256 === expected.contractSpecSha256 ? [] : [specFile]),
    ...(actual.extensionSpecSha256 === expected.extensionSpecSha256 ? [] : [extensionFile]),
  ].map((file) => `machines/ were not generated from ${file} as it is now: run \`npm run generate\``);
  return [
    { check: 'the spec on disk is sound (its static proofs hold)', problems: soundness },
    { check: 'the generated machines are those of the spec on disk', problems: stale },
  ];
}
