import { createMachine, type AnyStateMachine } from 'xstate';
import type { EngineFaults } from './faults.js';
import { checkMachineProperties, generatedMachines } from './machine-properties.js';
import { InvariantViolation, World, type StoreKind } from './world.js';
import type { RetentionOptions } from '../../retention/policy.js';
import { loadInvariantRules } from '../../spec/invariant-rules.js';
import { loadLifecycleSpec } from '../../spec/lifecycle-spec.js';
import { checkStructuralProperties } from '../../spec/structural-properties.js';
import { PLANTED_SPEC_EDITS, type PlantedSpecEdit } from './planted-spec-edits.js';

/** One deliberately broken variant, the invariant that must catch it, and a scenario that exercises it. */
export interface BrokenVariant {
  name: string;
  invariant: string;
  fault?: keyof EngineFaults;
  store?: StoreKind;
  /** Retention for the variant's engines (off unless set). */
  retention?: RetentionOptions;
  scenario?: (world: World) => Promise<void>;
  machine?: () => string[];
}

export interface SelfCheckRow {
  variant: string;
  expected: string;
  /** For a planted spec edit: the structural property that must catch it. */
  property?: string;
  caughtBy: string[];
  status: 'caught' | 'missed';
}

const at = (w: World, time: string) => w.clock.set(`2026-03-02T${time}:00.000Z`);

async function slotRuns(w: World, behavior?: Parameters<World['behave']>[0]): Promise<void> {
  await w.define('alpha', 1, [9]);
  await w.verify('define alpha');
  if (behavior !== undefined) w.behave(behavior);
  at(w, '09:00');
  await w.tick();
  await w.verify('tick at 09:00');
  at(w, '09:06');
  await w.tick();
  await w.verify('tick at 09:06');
}

/** The terminal-exit variant is a spec edit: the occurrence machine gains succeeded → running. */
function machineWithTerminalExit(): AnyStateMachine {
  const subject = generatedMachines().find((m) => m.id === 'occurrence.v1')!;
  const config = subject.machine.config as { states: Record<string, Record<string, unknown>> } & Record<
    string,
    unknown
  >;
  const states = {
    ...config.states,
    succeeded: {
      on: { runtime_started: { target: 'running', guard: { type: 'actorIs', params: { actor: 'dispatcher' } } } },
    },
  };
  return createMachine(
    { ...config, states } as never,
    subject.machine.implementations as never,
  ) as unknown as AnyStateMachine;
}

export const BROKEN_VARIANTS: BrokenVariant[] = [
  {
    name: 'machine walk: a transition out of a terminal state (occurrence succeeded → running)',
    invariant: 'terminal-no-regress',
    machine: () => {
      const subject = generatedMachines().find((m) => m.id === 'occurrence.v1')!;
      const spec = structuredClone(subject.spec);
      spec.transitions.push({ from: 'succeeded', to: 'running', on: 'runtime_started', actor: 'dispatcher' });
      return checkMachineProperties([{ id: 'occurrence.v1', spec, machine: machineWithTerminalExit() }], {
        runs: 50,
        seed: 1,
      })
        .filter((r) => r.problems.length > 0)
        .map((r) => r.invariant);
    },
  },
  {
    name: 'launch before the adoption commit',
    invariant: 'adoption-before-side-effects',
    fault: 'launchBeforeAdoptionCommit',
    scenario: (w) => slotRuns(w),
  },
  {
    // A manual run claims, accepts and queues its launch in its command's one commit: the early launch lands inside it.
    name: 'launch before the adoption commit (run-now)',
    invariant: 'adoption-before-side-effects',
    fault: 'launchBeforeAdoptionCommit',
    scenario: async (w) => {
      await w.define('alpha', 1, [9]);
      await w.verify('define alpha');
      at(w, '08:00');
      await w.command('occurrence.runNow.v1', { automationId: 'alpha' });
      await w.verify('runNow');
    },
  },
  {
    name: 'a second run accepted for one fence generation',
    invariant: 'one-fence-one-run',
    fault: 'acceptFenceTwice',
    scenario: (w) => slotRuns(w),
  },
  {
    name: 'a second session bound to one attempt',
    invariant: 'one-attempt-one-session',
    fault: 'bindSecondSession',
    scenario: (w) => slotRuns(w),
  },
  {
    name: 'an automatic retry after an ambiguous disposition',
    invariant: 'ambiguous-never-auto-retried',
    fault: 'autoRetryAmbiguous',
    scenario: (w) => slotRuns(w, 'lost-after-side-effect'),
  },
  {
    name: 'a success without runtime evidence',
    invariant: 'no-evidence-no-success',
    fault: 'successWithoutEvidence',
    scenario: (w) => slotRuns(w, 'lost-after-side-effect'),
  },
  {
    name: 'a retry that rewrites the prior attempt',
    invariant: 'retry-new-attempt',
    fault: 'rewritePriorAttempt',
    store: 'unsealed-memory',
    scenario: async (w) => {
      await slotRuns(w, 'refuse');
      const held = await w.store.read((r) => r.list<{ snapshot: { value: string } }>('run'));
      await w.command('attempt.retry.v1', { runId: held[0]!.id, priorAttemptNumber: 1, priorDisposition: 'failed' });
      await w.verify('operator retry');
    },
  },
  {
    name: 'planning for a tombstoned definition',
    invariant: 'tombstone-preserves-history',
    fault: 'planTombstoned',
    scenario: async (w) => {
      await w.define('alpha', 1, [9]);
      await w.command('definition.tombstone.v1', { automationId: 'alpha' }, { expectedRevision: 3 });
      at(w, '09:00');
      await w.tick();
      await w.verify('tick after tombstone');
    },
  },
  {
    name: 'a cancellation acknowledged without the runtime',
    invariant: 'cancellation-is-a-request',
    fault: 'ackCancelWithoutRuntime',
    scenario: async (w) => {
      await slotRuns(w, 'hang');
      const live = await w.store.read((r) => r.liveWork('occurrence'));
      await w.command('occurrence.cancel.v1', { occurrenceId: live[0]!.id });
      await w.verify('cancel');
      // The runtime adapter answers the cancel itself; the engine settles on that answer when it next observes.
      await w.tick();
      await w.verify('tick after cancel');
    },
  },
  {
    name: 'a revise that rewrites historic records onto the new revision',
    invariant: 'revision-pins-history',
    fault: 'rewriteHistoricRevision',
    scenario: async (w) => {
      await slotRuns(w, 'hang');
      await w.revise('alpha', 10);
      await w.verify('revise');
    },
  },
  {
    name: 'retention compacts a live occurrence as if it had settled',
    invariant: 'compaction-behind-snapshot',
    fault: 'compactLiveHistory',
    retention: { windowDays: { standard: 1 / 1440 }, sweepEveryMinutes: 0 },
    scenario: (w) => slotRuns(w, 'hang'),
  },
  {
    name: 'a run-now while a scheduled run is live, its overlap check blind to live work',
    invariant: 'one-live-run-per-automation',
    fault: 'ignoreLiveWork',
    scenario: async (w) => {
      await slotRuns(w, 'hang');
      await w.command('occurrence.runNow.v1', { automationId: 'alpha' });
      await w.verify('runNow while alpha runs');
    },
  },
  {
    name: 'an unconfirmed launch sent again (duplicate dispatch for one fence)',
    invariant: 'no-duplicate-dispatch-per-fence',
    fault: 'resendUnconfirmedLaunches',
    scenario: (w) => slotRuns(w, 'crash-during-launch'),
  },
];

/**
 * A planted spec edit against the structural properties: caught when the property it names fails, and with it the
 * invariant; `caughtBy` lists every invariant (property) that failed.
 */
export function checkPlantedSpecEdit(planted: PlantedSpecEdit): SelfCheckRow {
  const spec = loadLifecycleSpec();
  planted.edit(spec);
  const failed = checkStructuralProperties(spec, loadInvariantRules()).filter((r) => r.problems.length > 0);
  return {
    variant: planted.name,
    expected: planted.invariant,
    property: planted.property,
    caughtBy: failed.map((r) => `${r.invariant} (${r.property})`),
    status: failed.some((r) => r.property === planted.property && r.invariant === planted.invariant)
      ? 'caught'
      : 'missed',
  };
}

/**
 * Runs every broken variant, then every planted spec edit, and reports which invariants caught each; a variant is
 * caught only by name.
 */
export async function runSelfCheck(onProgress?: (message: string) => void): Promise<SelfCheckRow[]> {
  const rows: SelfCheckRow[] = [];
  for (const variant of BROKEN_VARIANTS) {
    onProgress?.(`self-check: ${variant.name}`);
    let caughtBy: string[] = [];
    if (variant.machine !== undefined) {
      caughtBy = [...new Set(variant.machine())];
    } else {
      const world = await World.create(
        variant.store ?? 'memory',
        variant.fault === undefined ? {} : { [variant.fault]: true },
        new Map(),
        variant.retention ?? false,
      );
      try {
        await variant.scenario!(world);
      } catch (error) {
        if (!(error instanceof InvariantViolation)) throw error;
        caughtBy = [...error.violations.keys()];
      } finally {
        await world.dispose();
      }
    }
    rows.push({
      variant: variant.name,
      expected: variant.invariant,
      caughtBy,
      status: caughtBy.includes(variant.invariant) ? 'caught' : 'missed',
    });
  }
  onProgress?.(`self-check: ${PLANTED_SPEC_EDITS.length} planted spec edits against the structural properties`);
  return [...rows, ...PLANTED_SPEC_EDITS.map(checkPlantedSpecEdit)];
}
