import { OCCURRENCE_LIVE_STATES, OccurrenceState } from '../../../machines/index.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import {
  KINDS,
  occurrenceContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../../domain/records.js';
import type { CaseRunner } from './suite-cases.js';
import { setupVector } from './vector-runner.js';
import { envelope, type VectorRun } from './vector-session.js';

const ID = 'arbitration-probe';
/** The probe's run deadline: the case's timeout instant is this long after the launch. */
const TIMEOUT_MINUTES = 30;
const PROBE = {
  schemaVersion: 1,
  id: ID,
  name: 'Arbitration probe',
  status: 'ACTIVE',
  rrule: 'FREQ=DAILY;BYHOUR=9',
  timezone: 'utc',
  misfire: 'latest',
  overlap: 'forbid',
  timeoutMinutes: TIMEOUT_MINUTES,
  runtime: 'coven-code',
  cwd: '/work/project',
  prompt: 'Run the arbitration probe.',
};

/** A command's answer in the reference's words: committed cancelled, or the refusal's code. */
function answerOf(r: CommandResponse): string {
  if (r.outcome === 'committed') return String((r.result as { status?: string } | undefined)?.status ?? 'committed');
  return String(r.error?.code).toLowerCase();
}

/** The probe's one run, its occurrence and latest attempt, as the store holds them. */
async function records(run: VectorRun) {
  return run.store.read(async (r) => {
    const runRecord = (await r.list<RunRecord['data']>(KINDS.run)).at(0) as RunRecord | undefined;
    const occurrence = (await r.list<OccurrenceRecord['data']>(KINDS.occurrence)).at(0) as OccurrenceRecord | undefined;
    const attemptId = runRecord?.data.attributes.attemptIds.at(-1);
    const attempt = attemptId === undefined ? undefined : await r.get<AttemptRecord['data']>(KINDS.attempt, attemptId);
    const attemptState = attempt === undefined ? 'absent' : stateOf(attempt as AttemptRecord);
    return { run: runRecord, occurrence, attemptState };
  });
}

/** The occurrence's cancellation request: settled by it (cancelled), still pending, or overtaken (rejected). */
function cancellationState(occurrence: OccurrenceRecord | undefined): string {
  if (occurrence?.data.attributes.cancellation === undefined) return 'none';
  const state = stateOf(occurrence);
  if (state === OccurrenceState.cancelled) return 'cancelled';
  return OCCURRENCE_LIVE_STATES.has(state) ? 'pending' : 'rejected';
}

/**
 * cancellation-timeout-arbitration: a running session is cancelled at one instant, its run's deadline passes at
 * another, and a pass looks after the deadline. The engine is driven as its daemon would be: the launch pass, the
 * pass the cancellation's commit wakes, the pass after the deadline; then the cancellation is requested again.
 */
export const cancellationTimeoutArbitration: CaseRunner = async (c, judge) => {
  const timeoutAt = Date.parse(String(c.timeoutAt));
  const launchAt = new Date(timeoutAt - TIMEOUT_MINUTES * 60_000).toISOString();
  const run = await setupVector({
    vectorId: `arbitration.${c.caseId}`,
    profile: '',
    title: c.caseId,
    virtualTime: { start: launchAt },
    input: { definitions: [PROBE] },
    expected: {},
  });
  let stops = 0;
  const stop = run.runtime.cancel.bind(run.runtime);
  run.runtime.cancel = (sessionId, now) => ((stops += 1), stop(sessionId, now));
  run.runtime.defaultBehavior = 'hang';
  await run.engine.commands.handle(envelope('occurrence.runNow.v1', { automationId: ID }));
  await run.engine.tick();
  const runId = (await records(run)).run?.id ?? 'absent';

  run.clock.set(String(c.cancellationAt));
  const cancellation = await run.engine.commands.handle(envelope('run.cancel.v1', { runId }));
  await run.engine.tick();

  run.clock.set(String(c.timeoutObservedAt));
  const before = await records(run);
  const stopsBefore = stops;
  await run.engine.tick();
  const after = await records(run);
  const untouched = after.occurrence?.version === before.occurrence?.version && stops === stopsBefore;
  const competing = untouched ? 'deferred' : after.occurrence === undefined ? 'absent' : stateOf(after.occurrence);
  const replay = await run.engine.commands.handle(envelope('run.cancel.v1', { runId }));
  const final = await records(run);

  const observed: Record<string, unknown> = {
    cancellationOutcome: answerOf(cancellation),
    competingOutcome: competing,
    replayOutcome: answerOf(replay),
    runtimeStopCount: stops,
    runStatus: final.run === undefined ? 'absent' : stateOf(final.run),
    occurrenceState: final.occurrence === undefined ? 'absent' : stateOf(final.occurrence),
    attemptState: final.attemptState,
    cancellationState: cancellationState(final.occurrence),
  };
  const o = final.occurrence;
  const seen =
    o === undefined
      ? []
      : [{ ...o.data.attributes, automationId: ID, state: stateOf(o), deadlineAt: occurrenceContext(o).deadlineAt }];
  for (const [key, expected] of Object.entries(c.expected!))
    judge(key, observed[key] === expected, expected, observed[key], { occurrences: seen });
};
