import { KINDS, stateOf, type AttemptRecord, type OccurrenceRecord, type RunRecord } from '../../domain/records.js';
import { Engine, type TickReport } from '../../engine/engine.js';
import { ManualTimers, type ScheduledPass } from '../manual-timers.js';
import type { CaseRunner } from './suite-cases.js';
import { setupVector } from './vector-runner.js';
import { currentDefinition, envelope, type VectorRun } from './vector-session.js';

type Flat = Record<string, unknown> & { id: string; status: string };

/** What the store holds of the probe after the passes: occurrences, and the attempt states of each run. */
async function probeRecords(run: VectorRun) {
  return run.store.read(async (r) => {
    const occurrences = (await r.list<OccurrenceRecord['data']>(KINDS.occurrence)) as OccurrenceRecord[];
    const attemptStates = new Map<string, string[]>();
    for (const record of (await r.list<RunRecord['data']>(KINDS.run)) as RunRecord[]) {
      const states = [];
      for (const id of record.data.attributes.attemptIds) {
        const attempt = await r.get<AttemptRecord['data']>(KINDS.attempt, id);
        if (attempt !== undefined) states.push(stateOf(attempt as AttemptRecord));
      }
      attemptStates.set(record.id, states);
    }
    const seen = occurrences.map((o) => ({ ...o.data.attributes, state: stateOf(o) }));
    return { seen, attemptStates };
  });
}

/**
 * The engine as its daemon runs it: `start()` (the production start path) with timers the runner fires. Each pass
 * fired is awaited through the wait the engine schedules after it.
 */
function daemonOn(run: VectorRun) {
  const timers = new ManualTimers();
  const passes: TickReport[] = [];
  const engine = new Engine({
    store: run.store,
    clock: run.clock,
    runtimes: [run.runtime],
    instanceId: 'conformance-daemon',
    timers,
  });
  engine.start((report) => passes.push(report));
  /** Fires the pass scheduled as #index; resolves with the one the engine schedules next. */
  const firePass = async (index: number): Promise<ScheduledPass> => {
    timers.fire(await timers.scheduled(index));
    return timers.scheduled(index + 1);
  };
  return { engine, timers, passes, firePass };
}

/**
 * startup-reconciliation-wake: the definition is imported at `createdAt`; the daemon starts at `observedAt`. The
 * startup pass reconciles (a due slot launches) before the engine's first wait; a definition change made while
 * it waits wakes it (`definition_change_wake`), and the woken pass launches what became due.
 */
export const startupReconciliationWake: CaseRunner = async (c, judge) => {
  const definition = c.definition as Flat;
  const run = await setupVector({
    vectorId: `startup.${c.caseId}`,
    profile: '',
    title: c.caseId,
    virtualTime: { start: String(c.createdAt) },
    input: { definitions: [definition] },
    expected: {},
  });
  run.clock.set(String(c.observedAt));
  // The probe's session is an agent's: still running when the passes observe it.
  run.runtime.defaultBehavior = 'hang';
  const daemon = daemonOn(run);
  const observed: Record<string, unknown> = {};
  const activations = new Map<string, string>();
  try {
    const firstWait = await daemon.firePass(0);
    observed.productionStartPath = daemon.passes[0]?.trigger === 'startup';
    observed.systemWaitObserved = firstWait.trigger === 'wait' && firstWait.delayMs > 0;
    observed.launchedBeforeFirstWait = run.runtime.launchCalls > 0;
    const revised = c.revisedDefinition as Flat | undefined;
    if (revised?.status === 'ACTIVE') {
      const current = await currentDefinition(daemon.engine.commands, revised.id);
      const answer = await daemon.engine.commands.handle(
        envelope(
          'definition.activate.v1',
          { automationId: revised.id },
          { expectedRevision: Number(current.revision) },
        ),
      );
      observed.actionAccepted = answer.outcome === 'committed';
      if (answer.outcome === 'committed') activations.set(revised.id, run.clock.now().toISOString());
      const wake = await daemon.timers.scheduled(firstWait.id);
      observed.wakeObserved = wake.trigger === 'wake' && wake.delayMs < firstWait.delayMs;
      await daemon.firePass(firstWait.id);
    }
  } finally {
    await daemon.engine.stop();
  }
  const { seen, attemptStates } = await probeRecords(run);
  observed.launchCount = run.runtime.launchCalls;
  observed.lastPassTrigger = daemon.passes.at(-1)?.trigger ?? 'none';
  observed.occurrenceState = seen.at(-1)?.state ?? 'absent';
  observed.finalRevision = (await currentDefinition(daemon.engine.commands, definition.id)).revision;
  // Each scenario asks one question; its outcome is the engine's answer to it.
  const outcomes: Record<string, string> = {
    startup_immediate_reconcile: observed.launchedBeforeFirstWait === true ? 'startup_reconciled' : 'not_reconciled',
    definition_change_wake:
      observed.wakeObserved === true ? 'definition_change_woke_scheduler' : 'scheduler_kept_waiting',
  };
  observed.outcome = outcomes[String(c.scenario)] ?? `no such scenario: ${String(c.scenario)}`;
  for (const [key, expected] of Object.entries(c.expected!))
    judge(key, observed[key] === expected, expected, observed[key], { occurrences: seen, attemptStates, activations });
};
