import fc from 'fast-check';
import type { EngineFaults } from './faults.js';
import { INVARIANTS } from './checks.js';
import { engineCommands, type Model } from './engine-model.js';
import {
  checkMachineProperties,
  generatedMachines,
  type MachinePropertyResult,
  type MachineUnderTest,
} from './machine-properties.js';
import { runOnMachines } from '../../domain/machine-set.js';
import { InvariantViolation, World, type StoreKind } from './world.js';
import type { RetentionOptions } from '../../retention/policy.js';
import { buildsInMemory, specUnderProof, type SpecCheck, type SpecOnDiskOptions } from './spec-on-disk.js';

export interface SuiteOptions {
  /** Engine-level property runs per store kind. */
  runs: number;
  /** Machine-level walks per machine and property. */
  machineRuns?: number;
  seed: number;
  maxCommands?: number;
  stores?: StoreKind[];
  /** The database the `postgres` store kind runs on (each world gets a scratch schema there, dropped after). */
  postgresUrl?: string;
  faults?: Partial<EngineFaults>;
  /** Retention for the engines under test (default off): the checks then read the retained history. */
  retention?: RetentionOptions;
  onProgress?: (message: string) => void;
  /** The spec files checked first (default: this package's); see {@link checkSpecOnDisk}. */
  spec?: SpecOnDiskOptions;
}

export interface EngineFailure {
  store: StoreKind;
  invariants: string[];
  problems: string[];
  /** The shrunk command sequence, one command per line. */
  counterexample: string;
  seed: number;
  path: string | undefined;
}

export interface InvariantRow {
  invariant: string;
  source: 'contract' | 'conformance';
  /**
   * Where it is enforced: `structural` (rules over the spec graph as written), `semantic` (walks of the generated
   * machines that evaluate guards), `engine` (checks of the engine's history after every step).
   */
  levels: Array<'structural' | 'semantic' | 'engine'>;
  runs: number;
  stepsChecked: number;
  status: 'passed' | 'failed';
}

export interface SuiteResult {
  seed: number;
  rows: InvariantRow[];
  machine: MachinePropertyResult[];
  failures: EngineFailure[];
  /** The spec on disk, checked before anything else; with a problem here nothing else runs and the suite fails. */
  specChecks: SpecCheck[];
  passed: boolean;
}

/** The engine-level property for one store kind: random command sequences, every invariant after every step. */
export async function runEngineProperty(
  store: StoreKind,
  options: SuiteOptions,
  checked: Map<string, number>,
): Promise<EngineFailure | undefined> {
  let runs = 0;
  const report = await fc.check(
    fc.asyncProperty(
      fc.commands(engineCommands(), { maxCommands: options.maxCommands ?? 40, size: 'large' }),
      async (commands) => {
        const world = await World.create(store, options.faults ?? {}, checked, options.retention ?? false, {
          ...(options.postgresUrl === undefined ? {} : { postgresUrl: options.postgresUrl }),
        });
        try {
          await fc.asyncModelRun(() => ({ model: {} as Model, real: world }), commands);
        } finally {
          await world.dispose();
          runs += 1;
          if (runs % 10 === 0) options.onProgress?.(`engine (${store} store): ${runs} runs`);
        }
      },
    ),
    { seed: options.seed, numRuns: options.runs },
  );
  if (!report.failed) return undefined;
  const violation = report.errorInstance instanceof InvariantViolation ? report.errorInstance : undefined;
  return {
    store,
    invariants: violation === undefined ? ['(engine error)'] : [...violation.violations.keys()],
    problems:
      violation === undefined ? [String(report.errorInstance)] : [...violation.violations.values()].flat().slice(0, 10),
    counterexample: String(report.counterexample?.[0] ?? '')
      .split(',')
      .join('\n'),
    seed: report.seed,
    path: report.counterexample === null ? undefined : (report.counterexamplePath ?? undefined),
  };
}

/**
 * Two engines and operator commands racing on one store, with fast-check choosing the order of every
 * transaction; all invariants are checked after each round.
 */
export async function runInterleavingProperty(
  options: SuiteOptions,
  checked: Map<string, number>,
): Promise<EngineFailure | undefined> {
  const rounds = fc.array(fc.tuple(fc.constantFrom(1, 5, 61), fc.boolean(), fc.boolean()), {
    minLength: 1,
    maxLength: 6,
  });
  const report = await fc.check(
    fc.asyncProperty(fc.scheduler(), rounds, async (s, plan) => {
      const world = World.scheduled(s, checked);
      try {
        await s.waitFor(world.define('alpha', 2, [9, 10]));
        world.clock.set('2026-03-02T09:00:00.000Z');
        for (const [minutes, runNow, cancel] of plan) {
          const work: Array<Promise<unknown>> = [world.tick(0), world.tick(1)];
          if (runNow) work.push(world.command('occurrence.runNow.v1', { automationId: 'alpha' }, { engine: 1 }));
          if (cancel) {
            work.push(
              world.store
                .read((r) => r.liveWork('occurrence'))
                .then((live) =>
                  live[0] === undefined
                    ? undefined
                    : world.command('occurrence.cancel.v1', { occurrenceId: live[0].id }),
                ),
            );
          }
          await s.waitFor(Promise.all(work));
          await s.waitFor(
            world.verify(`round (+${minutes} min${runNow ? ', runNow' : ''}${cancel ? ', cancel' : ''})`),
          );
          world.clock.advance({ minutes });
        }
      } finally {
        await world.dispose();
      }
    }),
    { seed: options.seed, numRuns: Math.max(1, Math.floor(options.runs / 2)) },
  );
  if (!report.failed) return undefined;
  const violation = report.errorInstance instanceof InvariantViolation ? report.errorInstance : undefined;
  return {
    store: 'memory',
    invariants: violation === undefined ? ['(engine error)'] : [...violation.violations.keys()],
    problems:
      violation === undefined ? [String(report.errorInstance)] : [...violation.violations.values()].flat().slice(0, 10),
    counterexample: String(report.counterexample?.[0] ?? ''),
    seed: report.seed,
    path: report.counterexamplePath ?? undefined,
  };
}

/**
 * The retention run: a one-minute window swept every pass, so settled history is compacted as soon as it may
 * be and races everything else; longer sequences, because an occurrence must come due and settle first.
 */
export const RETENTION_PROPERTY = (runs: number): Pick<SuiteOptions, 'runs' | 'maxCommands' | 'retention'> => ({
  runs: runs * 2,
  maxCommands: 100,
  retention: { windowDays: { standard: 1 / 1440 }, sweepEveryMinutes: 0 },
});

const MACHINE_LEVEL = new Set([
  'terminal-no-regress',
  'no-evidence-no-success',
  'ambiguous-never-auto-retried',
  'one-attempt-one-session',
]);

/** Runs the machine-level properties and the engine-level property on each store kind; never throws on a violation. */
export async function runInvariantSuite(options: SuiteOptions): Promise<SuiteResult> {
  options.onProgress?.(
    options.spec !== undefined && buildsInMemory(options.spec)
      ? 'the spec files: schema, static proofs, structural properties, and the machines built in memory from them'
      : 'the spec on disk: schema, static proofs, structural properties, and the machines generated from it',
  );
  const proof = specUnderProof(options.spec);
  const specChecks = proof.checks;
  if (specChecks.some((c) => c.problems.length > 0))
    return { seed: options.seed, rows: [], machine: [], failures: [], specChecks, passed: false };
  const { machines, spec } = proof;
  if (machines === undefined || spec === undefined) return proveMachines(options, specChecks, generatedMachines());
  const subjects = spec.machines.map((m) => ({ id: m.id, spec: m, machine: machines[m.entity] }));
  // Every engine step of the engine-level properties, however deep, decides with the machines built from the spec.
  return runOnMachines(machines, () => proveMachines(options, specChecks, subjects));
}

/** The machine-level properties over `subjects`, then the engine-level properties, after the spec checks passed. */
async function proveMachines(
  options: SuiteOptions,
  specChecks: SpecCheck[],
  subjects: MachineUnderTest[],
): Promise<SuiteResult> {
  const stores = options.stores ?? ['memory', 'json', 'sqlite'];
  const origin = options.spec !== undefined && buildsInMemory(options.spec) ? 'built from the spec' : 'generated';
  options.onProgress?.(`machine-level properties over the ${origin} machines`);
  const machine = checkMachineProperties(subjects, { runs: options.machineRuns ?? 200, seed: options.seed });
  const checked = new Map<string, number>();
  const failures: EngineFailure[] = [];
  for (const store of stores) {
    options.onProgress?.(`engine-level property on the ${store} store (${options.runs} runs)`);
    const failure = await runEngineProperty(store, options, checked);
    if (failure !== undefined) failures.push(failure);
  }
  options.onProgress?.(
    `engine-level property with retention compacting history a minute after it settles (memory store, ` +
      `${options.runs * 2} runs)`,
  );
  const retained = await runEngineProperty('memory', { ...options, ...RETENTION_PROPERTY(options.runs) }, checked);
  if (retained !== undefined) failures.push(retained);
  options.onProgress?.('interleavings: two engines and commands under a fast-check scheduler');
  const interleaving = await runInterleavingProperty(options, checked);
  if (interleaving !== undefined) failures.push(interleaving);
  const rows: InvariantRow[] = INVARIANTS.map((invariant) => {
    const machineResults = machine.filter((m) => m.invariant === invariant.id);
    const structural = specChecks.filter((c) => c.invariant === invariant.id);
    const failed =
      failures.some((f) => f.invariants.includes(invariant.id)) || machineResults.some((m) => m.problems.length > 0);
    return {
      invariant: invariant.id,
      source: invariant.source,
      levels: [
        ...(structural.length > 0 ? (['structural'] as const) : []),
        ...(MACHINE_LEVEL.has(invariant.id) ? (['semantic'] as const) : []),
        'engine',
      ],
      runs: options.runs * (stores.length + 2) + machineResults.reduce((n, m) => n + m.runs, 0),
      stepsChecked:
        (checked.get(invariant.id) ?? 0) +
        machineResults.reduce((n, m) => n + m.steps, 0) +
        structural.reduce((n, c) => n + (c.checked ?? 0), 0),
      status: failed ? 'failed' : 'passed',
    };
  });
  return {
    seed: options.seed,
    rows,
    machine,
    failures,
    specChecks,
    passed: rows.every((r) => r.status === 'passed') && failures.length === 0,
  };
}
