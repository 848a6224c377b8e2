import { SimulatedClock } from '../../clock/clock.js';
import { StaleGenerationError } from '../../domain/scheduler-generation.js';
import { Engine, type TickReport } from '../../engine/engine.js';
import { SimulatedRuntime } from '../../runtime/simulated-runtime.js';
import { MemoryStore } from '../../store/memory-store.js';
import type { CaseRunner } from './suite-cases.js';

/** One engine instance id, started twice on one store: the reference's two scheduler acquisitions. */
const INSTANCE = 'conformance-scheduler';

type Pass = { report: TickReport } | { refused: StaleGenerationError };

/** A pass, its refusal captured (any other failure is the engine's crash and propagates). */
async function pass(engine: Engine): Promise<Pass> {
  try {
    return { report: await engine.tick() };
  } catch (error) {
    if (error instanceof StaleGenerationError) return { refused: error };
    throw error;
  }
}

const generationOf = (p: Pass): number | null => ('report' in p ? p.report.generation : null);

function leadershipWorld(start: string) {
  const store = new MemoryStore();
  const clock = new SimulatedClock(start);
  const runtimes = [new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 0 })];
  let commits = 0;
  store.onCommit(() => void (commits += 1));
  return {
    clock,
    /** A new process of the same engine instance id on the same store. */
    instance: () => new Engine({ store, clock, runtimes, instanceId: INSTANCE }),
    commits: () => commits,
  };
}

/**
 * scheduler-leadership-fencing: two processes of one engine instance id acquire scheduler generations on one
 * store, each through its first real pass. At one instant the compare-and-set admits one of them; later, the
 * second advances the generation and the first one's passes are refused without a commit.
 */
export const schedulerLeadershipFencing: CaseRunner = async (c, judge) => {
  const want = c.expected!;
  const world = leadershipWorld(String(c.firstAcquiredAt));
  const first = world.instance();
  const second = world.instance();
  let firstPass: Pass;
  let secondPass: Pass;
  if (c.secondAttemptAt === c.firstAcquiredAt) {
    // Both processes start their first pass together: neither has committed when the other reads the counter.
    [firstPass, secondPass] = await Promise.all([pass(first), pass(second)]);
  } else {
    firstPass = await pass(first);
    world.clock.set(String(c.secondAttemptAt));
    secondPass = await pass(second);
  }
  const commitsBefore = world.commits();
  const firstAgain = await pass(first);
  const staleCommits = world.commits() - commitsBefore;
  const secondAgain = 'report' in secondPass ? await pass(second) : undefined;
  const staleRejected = 'refused' in firstAgain && staleCommits === 0;
  const currentAccepted = secondAgain !== undefined && 'report' in secondAgain;
  // Each scenario asks one question; its outcome is the engine's answer to it.
  const outcomes: Record<string, string> = {
    exclusive_acquisition: 'refused' in secondPass ? 'second_acquisition_refused' : 'second_acquired',
    restart_advances_generation:
      (generationOf(secondPass) ?? 0) > (generationOf(firstPass) ?? 0) ? 'generation_advanced' : 'generation_kept',
    stale_fence_rejected: staleRejected && currentAccepted ? 'stale_tick_rejected' : 'stale_tick_accepted',
  };
  const observed: Record<string, unknown> = {
    outcome: outcomes[String(c.scenario)] ?? `no such scenario: ${String(c.scenario)}`,
    firstGeneration: generationOf(firstPass),
    secondGeneration: generationOf(secondPass),
    firstFenceCurrent: 'report' in firstAgain,
    secondFenceCurrent: currentAccepted,
    staleTickRejected: staleRejected,
    currentTickAccepted: currentAccepted,
  };
  for (const [key, expected] of Object.entries(want)) judge(key, observed[key] === expected, expected, observed[key]);
};
