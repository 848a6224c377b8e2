import { resolveOrphanedLaunches } from '../dispatcher/orphaned-launches.js';
import type { LaunchOutcome } from '../domain/launch-outcome.js';
import type { WorkPartition } from '../domain/work-partition.js';
import type { EngineServices } from '../domain/services.js';
import { renewOwnerLease } from '../domain/owner-lease.js';
import { advanceAll } from '../scheduler/pass.js';
import { planDueSlots } from '../scheduler/planning.js';
import type { PlanCarry } from '../scheduler/plan-carry.js';
import type { PassTrigger } from './timers.js';

/** What one pass did. */
export interface TickReport {
  at: string;
  /** The scheduler generation this pass ran under (scheduler-generation.ts). */
  generation: number;
  /** Why the pass ran (see {@link PassTrigger}). */
  trigger: PassTrigger;
  planned: number;
  launched: number;
  /** Attempts settled: by this pass's observations, and by runtimes' exit cues since the previous pass. */
  settled: number;
  launches: LaunchOutcome[];
  /** Steps that failed in this pass; each rolled back alone, the rest of the pass went on. */
  errors: Error[];
  /**
   * Steps that lost a race with another writer of the same store (another engine committed the record or
   * stream first): each rolled back whole, the winner's work stands, and the next pass looks again. Not errors.
   */
  contended: number;
  /** Steps passed over because another engine held their record at that moment: looked at again shortly. */
  passedOver: number;

  /** Settled occurrences whose history retention compacted in this pass. */
  compacted: number;
  /** Wall time each phase took (ms), for operators and the bench; never read by engine logic. */
  phaseMs: { plan: number; advance: number; dispatch: number; observe: number; retention: number; checkpoint: number };
}

export type PassPhaseName = keyof TickReport['phaseMs'];

/** What a phase works with: the services, the pass's report, and the engine's own steps it needs. */
export interface PassRun {
  svc: EngineServices;
  report: TickReport;
  /** This engine's share of the work, read once at the pass's start (every phase works the same share). */
  partition: WorkPartition;
  /** Whether the store's set-based claim had anything due when the pass began (stores that have one). */
  dueAtStart: boolean;
  /** How far planning carries what it plans in the plan's own commit (see {@link PlanCarry}); none: planned only. */
  readonly carry: PlanCarry | undefined;
  /** What one phase leaves for the later ones, shared by every phase of the pass. */
  readonly findings: PassFindings;
  /** Releases committed launches and dispatches every claimed occurrence. */
  dispatchAll(errors: Error[]): Promise<LaunchOutcome[]>;
  /** The worker observes every started session. */
  observeAll(errors: Error[]): Promise<number>;
  /** A retention sweep when one is due; the occurrences it compacted. */
  sweepRetentionIfDue(errors: Error[]): Promise<number>;
}

/** What a pass's phases learn for the phases after them. */
export interface PassFindings {
  /** Occurrences the plan phase planned and did not claim: the advance phase's claim is for them. */
  plannedUnclaimed: number;
}

/** One phase of a pass; a pass runs them in order. */
export interface PassPhase {
  name: PassPhaseName;
  run(pass: PassRun): Promise<void>;
}

async function advance({ svc, report, partition, dueAtStart, findings }: PassRun): Promise<void> {
  // Before leases are judged: an orphaned launch that evidence can decide must never be treated as unknown.
  const orphans = await resolveOrphanedLaunches(svc, report.errors, partition);
  report.launches.push(...orphans.outcomes);
  // What this pass planned and did not claim is due now; what came due otherwise since its start waits for the
  // next pass's claim (or is taken one occurrence at a time below, as on a store without set-based claims).
  const claim = dueAtStart || findings.plannedUnclaimed > 0;
  const stops = await advanceAll(svc, report.errors, orphans.undecided, partition, claim);
  for (const stop of stops)
    await svc
      .runtime(stop.runtimeId)
      ?.cancel(stop.sessionId, svc.clock.now())
      .catch(() => undefined);
}

async function dispatch(pass: PassRun): Promise<void> {
  // After this pass's claims, before its launches: another engine must see this one alive while they run.
  await renewOwnerLease(pass.svc);
  pass.report.launches.push(...(await pass.dispatchAll(pass.report.errors)));
  pass.report.launched = pass.report.launches.filter((l) => l.result.outcome === 'started').length;
}

async function plan(pass: PassRun): Promise<void> {
  const { svc, report } = pass;
  const planning = await planDueSlots(svc, report.errors, pass.partition, pass.carry);
  report.planned = planning.planned.length;
  pass.findings.plannedUnclaimed = planning.planned.length - planning.claimed;
  report.launches.push(...planning.launches);
}

/**
 * A pass: plan due slots (each carried to its launch in its planning commit), advance occurrences (orphaned
 * launches, claims, leases, timeouts), dispatch what is still claimed, observe.
 */
export const PASS_PHASES: readonly PassPhase[] = [
  { name: 'plan', run: plan },
  { name: 'advance', run: advance },
  { name: 'dispatch', run: dispatch },
  {
    name: 'observe',
    run: async (pass) => {
      pass.report.settled += await pass.observeAll(pass.report.errors);
    },
  },
  {
    name: 'retention',
    run: async (pass) => {
      pass.report.compacted = await pass.sweepRetentionIfDue(pass.report.errors);
    },
  },
  {
    // After the pass, not inside its commits: the burst's pages are folded once each, off the latency path.
    name: 'checkpoint',
    run: async ({ svc }) => {
      await svc.store.checkpoint?.();
    },
  },
];
