/**
 * coven-automata/testkit: the invariant property suite, its self-check and the conformance-vector runner.
 *
 * A separate entry point so that `import 'coven-automata'` stays an engine: fast-check and @xstate/graph load
 * only when this module is imported.
 *
 * @example
 * ```ts
 * import { runInvariantSuite, runSelfCheck, formatSuite } from 'coven-automata/testkit';
 *
 * const result = await runInvariantSuite({ runs: 40, seed: 42, stores: ['memory', 'json'] });
 * const selfCheck = await runSelfCheck();
 * console.log(formatSuite(result, selfCheck));
 * process.exitCode = result.passed && selfCheck.every((row) => row.status === 'caught') ? 0 : 1;
 * ```
 * @packageDocumentation
 */

/**
 * Runs the machine-level properties over the generated machines and the engine-level property (random command
 * sequences, every invariant after every step) on each store kind, then with retention and under a scheduler
 * that interleaves two engines. Never throws on a violation: `passed` is false and `failures` carry the shrunk
 * counterexample and the seed to replay it.
 *
 * @example
 * ```ts
 * const { passed, failures } = await runInvariantSuite({ runs: 100, seed: 7, onProgress: console.error });
 * for (const f of failures) console.error(`${f.invariants.join(', ')} (seed ${f.seed}):\n${f.counterexample}`);
 * ```
 */
export {
  runInvariantSuite,
  type SuiteResult,
  type SuiteOptions,
  type InvariantRow,
  type EngineFailure,
} from './invariants/suite.js';

/**
 * The suite's self-check: every deliberately broken variant (a spec edit and the engine faults) must be caught
 * by the invariant it violates, by name. A `missed` row means the suite has lost its teeth.
 *
 * @example
 * ```ts
 * const rows = await runSelfCheck((message) => console.error(message));
 * const missed = rows.filter((row) => row.status === 'missed'); // each names the variant and its expected invariant
 * console.log(`${BROKEN_VARIANTS.length} variants, ${missed.length} missed`);
 * ```
 */
export {
  runSelfCheck,
  checkPlantedSpecEdit,
  BROKEN_VARIANTS,
  type BrokenVariant,
  type SelfCheckRow,
} from './invariants/self-check.js';
export { PLANTED_SPEC_EDITS, type PlantedSpecEdit } from './invariants/planted-spec-edits.js';

/**
 * The structural part of the ten invariants: rules over the spec's transition graph as written
 * (`spec/coven-automata/v1/invariant-rules.json`, each quoting its contract sentence), checked with no guard evaluated.
 *
 * @example
 * ```ts
 * const spec = loadLifecycleSpec('my-edit.json');
 * for (const r of checkStructuralProperties(spec, loadInvariantRules()))
 *   if (r.problems.length > 0) console.error(`${r.invariant} (${r.property}):\n  ${r.problems.join('\n  ')}`);
 * ```
 */
export { checkStructuralProperties, type StructuralResult } from '../spec/structural-properties.js';
export { loadInvariantRules, type InvariantRules, type StructuralRule } from '../spec/invariant-rules.js';
export { checkSpecOnDisk, type SpecCheck, type SpecOnDiskOptions } from './invariants/spec-on-disk.js';

/**
 * The checks the engine-level property runs over the store's whole history after every step: the contract's
 * ten invariants (`source: 'contract'`) and upstream's conformance gates (`source: 'conformance'`).
 *
 * @example
 * ```ts
 * const contract = INVARIANTS.filter((check) => check.source === 'contract').map((check) => check.id);
 * ```
 */
export { INVARIANTS, CONTRACT_INVARIANT_IDS, type InvariantCheck } from './invariants/checks.js';

/**
 * The machine-level properties, for a spec edit: walk a machine built from an edited spec (or the generated
 * ones) with the properties the suite runs. Run `specProblems` on the edit first: the walks take a sound spec.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import { checkMachineProperties, parseLifecycleSpec, specMachine, specProblems } from 'coven-automata/testkit';
 *
 * const edited = parseLifecycleSpec(readFileSync('my-state-machines.json', 'utf8'), 'my-state-machines.json');
 * const unsound = specProblems(edited); // the static proofs; empty when every one holds
 * // A machine built for the edit (XState's createMachine, or a regenerated one), walked against its spec entry:
 * const subject = {
 *   id: 'occurrence.v1',
 *   spec: specMachine(edited, 'occurrence.v1'),
 *   machine: myOccurrenceMachine,
 * } as const;
 * const broken = checkMachineProperties([subject], { runs: 200, seed: 1 }).filter((r) => r.problems.length > 0);
 * ```
 */
export {
  checkMachineProperties,
  generatedMachines,
  extensionMachinesUnderTest,
  type MachineUnderTest,
  type MachinePropertyResult,
} from './invariants/machine-properties.js';

/**
 * Seeded random walks with every event from every actor: only the actor a transition names moves it, and only
 * to its spec target.
 *
 * @example
 * ```ts
 * const subjects = [...generatedMachines(), ...extensionMachinesUnderTest()];
 * const results = checkActorProperty(subjects, { runs: 100, seed: 3 });
 * ```
 */
export { checkActorProperty } from './invariants/machine-actors.js';

/**
 * The suite's table (one row per invariant, failures with their counterexamples) and its result as an
 * audit-only `coven.automations.conformance-result.v1` envelope, validated against upstream's schema when the
 * upstream folder is at hand (undefined when it is not).
 *
 * @example
 * ```ts
 * const envelope = conformanceResult(result, selfCheck, new Date());
 * const problems = validateConformanceResult(envelope, '../shared/upstream'); // [] when valid
 * console.log(formatSuite(result, selfCheck));
 * ```
 */
export { formatSuite, conformanceResult } from './invariants/report.js';
export { validateConformanceResult } from './invariants/result-schema.js';

/**
 * The store kinds the engine-level property runs on (`unsealed-memory` is the self-check's store that lets a
 * record be rewritten) and the faults a suite run may switch on to watch it fail.
 *
 * @example
 * ```ts
 * const stores: StoreKind[] = ['memory', 'sqlite'];
 * const faults: Partial<EngineFaults> = { acceptFenceTwice: true }; // the suite must now fail one-fence-one-run
 * await runInvariantSuite({ runs: 20, seed: 5, stores, faults });
 * ```
 */
export type { StoreKind } from './invariants/world.js';
export type { EngineFaults } from './invariants/faults.js';

/**
 * The spec edits the machine-level properties take: parse a lifecycle spec from text and run its static
 * proofs (every state reachable, terminal states closed, ...).
 *
 * @example
 * ```ts
 * const spec = parseLifecycleSpec(text, 'my-edit.json'); // throws SpecFileError naming the file and the field
 * const problems = specProblems(spec);
 * ```
 */
export {
  parseLifecycleSpec,
  specMachine,
  type LifecycleSpec,
  type SpecMachine,
  type MachineId,
} from '../spec/lifecycle-spec.js';
export { specProblems, checkSpecSoundness, type SoundnessCheck, type ProvableMachine } from '../spec/soundness.js';

/**
 * Runs one upstream `conformance.vector.v1` file against a fresh engine and judges every expectation it
 * states: `pass`, `differs` (the contract decides otherwise; the rule is given), `unsupported` or `fail`.
 *
 * @example
 * ```ts
 * const report = await runVector('../shared/upstream/conformance/scenarios/scheduling/02-twice-daily-routine.json');
 * console.log(formatReports([report])); // report.status is the worst of its expectations
 * ```
 */
export { runVector } from './conformance/vector-runner.js';
export { formatReports, formatFileReports } from './conformance/report-format.js';

/**
 * The whole upstream corpus: every vector, scenario and audit-runner suite under `<upstream>/conformance`, each
 * file run on its own (a crash is that file's `crash`), with the summary line the CLI prints.
 *
 * @example
 * ```ts
 * const reports = [];
 * for (const file of findCorpus()) reports.push(await runFile(file));
 * console.log(summaryLine(reports)); // "N files: P pass, D differ, U unsupported, F fail, C crash"
 * ```
 */
export {
  findCorpus,
  runFile,
  summaryLine,
  differences,
  upstreamDirectory,
  type FileReport,
  type FileStatus,
} from './conformance/corpus.js';
/** The contract rules that decide a `differs`, each with its sentence quoted from the contract. */
export { CONTRACT_RULES, decidingRule, type ContractRule, type Situation } from './conformance/contract-rules.js';
export type {
  ConformanceVector,
  ExpectationResult,
  ExpectationStatus,
  VectorReport,
} from './conformance/vector-format.js';
