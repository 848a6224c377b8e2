import { join } from 'node:path';
import { GENERATED_FROM } from '../../../machines/index.js';
import { packageRoot } from '../../contract/package-root.js';
import { buildMachineSet, type MachineSet } from '../../domain/machine-set.js';
import { EXTENSION_SPEC_FILE, loadExtensionSpec, type ExtensionSpec } from '../../spec/extension-spec.js';
import { INVARIANT_RULES_FILE, loadInvariantRules } from '../../spec/invariant-rules.js';
import { loadLifecycleSpec, SPEC_FILE, SpecFileError, type LifecycleSpec } from '../../spec/lifecycle-spec.js';
import { extensionSpecProblems, specProblems } from '../../spec/soundness.js';
import { generatedFromOf, type GeneratedFrom } from '../../spec/spec-digest.js';
import { checkStructuralProperties } from '../../spec/structural-properties.js';

/** One check the suite makes of the spec before it proves anything about the machines. */
export interface SpecCheck {
  check: string;
  problems: string[];
  /** For a structural property: the invariant it belongs to and the property's name. */
  invariant?: string;
  property?: string;
  /** Transitions or product states the structural property checked. */
  checked?: number;
}

/** Which spec files to check, and the digests of what the machines were generated from (defaults: this package). */
export interface SpecOnDiskOptions {
  specFile?: string;
  extensionFile?: string;
  /** The structural rules of the invariants (default `spec/coven-automata/v1/invariant-rules.json`). */
  rulesFile?: string;
  /**
   * The digests of the specs the machines under proof were generated from: given, the generated machines/ are
   * proven and must match; left out with a spec or extension file named, the machines are built in memory from
   * those files and the engine runs on them.
   */
  generatedFrom?: GeneratedFrom;
}

/** The spec checks, and the machines the properties then run on (undefined: the generated machines/). */
export interface SpecUnderProof {
  checks: SpecCheck[];
  machines?: MachineSet;
  spec?: LifecycleSpec;
  extension?: ExtensionSpec;
}

/** Whether the suite builds the machines from the named files rather than proving the generated machines/. */
export const buildsInMemory = (options: SpecOnDiskOptions = {}): boolean =>
  options.generatedFrom === undefined && (options.specFile !== undefined || options.extensionFile !== undefined);

function load(options: SpecOnDiskOptions) {
  const root = packageRoot();
  const specFile = options.specFile ?? join(root, SPEC_FILE);
  const extensionFile = options.extensionFile ?? join(root, EXTENSION_SPEC_FILE);
  return {
    specFile,
    extensionFile,
    spec: loadLifecycleSpec(specFile),
    extension: loadExtensionSpec(extensionFile),
    rules: loadInvariantRules(options.rulesFile ?? join(root, INVARIANT_RULES_FILE)),
  };
}

/**
 * The spec on disk, checked before any property runs: it parses and matches its schema, its static proofs hold,
 * every invariant's structural properties hold over its graph as written, and the generated machines were generated
 * from it. A suite that skipped this would prove machines generated from another spec — the one on disk before an
 * edit the generator refused, say — or miss an edit whose guard is never true in the sampled contexts.
 */
export function checkSpecOnDisk(options: SpecOnDiskOptions = {}): SpecCheck[] {
  return specUnderProof(options).checks;
}

/**
 * {@link checkSpecOnDisk}, and the machines to prove: built in memory from the named spec files (see
 * {@link buildsInMemory}), where the last check is that they build; otherwise the generated ones, where it is that
 * they were generated from the spec on disk.
 */
export function specUnderProof(options: SpecOnDiskOptions = {}): SpecUnderProof {
  let loaded;
  try {
    loaded = load(options);
  } catch (error) {
    const unreadable = (error as NodeJS.ErrnoException).code !== undefined;
    if (!(error instanceof SpecFileError) && !unreadable) throw error;
    return {
      checks: [{ check: 'the spec files parse and match their schemas', problems: [(error as Error).message] }],
    };
  }
  const { spec, extension, rules, specFile, extensionFile } = loaded;
  const soundness = [...specProblems(spec), ...extensionSpecProblems(extension, spec)];
  const structural = checkStructuralProperties(spec, rules).map((r): SpecCheck => ({
    check: `structural property ${r.property} of ${r.invariant}`,
    invariant: r.invariant,
    property: r.property,
    checked: r.checked,
    problems: r.problems,
  }));
  const checks = [{ check: 'the spec on disk is sound (its static proofs hold)', problems: soundness }, ...structural];
  if (!buildsInMemory(options)) {
    const problems = staleFiles(options.generatedFrom ?? GENERATED_FROM, generatedFromOf(spec, extension), {
      specFile,
      extensionFile,
    });
    return { checks: [...checks, { check: 'the generated machines are those of the spec on disk', problems }] };
  }
  // An unsound spec is not built: the static proofs are what make a built machine meaningful.
  const built = soundness.length > 0 ? undefined : buildMachineSet(spec, extension);
  const check = `the engine's machines build in memory from ${specFile} and ${extensionFile}`;
  if (built === undefined) return { checks };
  return { checks: [...checks, { check, problems: built.problems }], machines: built.machines, spec, extension };
}

function staleFiles(
  expected: GeneratedFrom,
  actual: GeneratedFrom,
  files: { specFile: string; extensionFile: string },
): string[] {
  return [
    ...(actual.contractSpecSha256 === expected.contractSpecSha256 ? [] : [files.specFile]),
    ...(actual.extensionSpecSha256 === expected.extensionSpecSha256 ? [] : [files.extensionFile]),
  ].map((file) => `machines/ were not generated from ${file} as it is now: run \`npm run generate\``);
}

/** The invariants a failed spec check names: those whose structural properties the spec violates. */
export function violatedBySpec(checks: readonly SpecCheck[]): string[] {
  return [...new Set(checks.flatMap((c) => (c.problems.length > 0 && c.invariant !== undefined ? [c.invariant] : [])))];
}
