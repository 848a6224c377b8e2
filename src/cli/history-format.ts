import { AttemptState, OccurrenceState, RunState } from '../../machines/index.js';
import { failureBlock, failureReason, lastResultText } from './failure-format.js';
import { paint, table } from './format.js';

type Rendered = Record<string, unknown>;

/**
 * The states of a rendered attempt row that mean "not ended yet". Kept as it was: the attempt states, plus
 * occurrence and run names that an attempt row never carries.
 */
const UNSETTLED: ReadonlySet<string> = new Set<string>([
  OccurrenceState.planned,
  OccurrenceState.claimed,
  AttemptState.dispatching,
  RunState.running,
  AttemptState.started,
  AttemptState.observing,
]);

/**
 * Why a run stands where it does, for the human `history` table: the latest attempt's reason when that attempt
 * ended without success (a launch that could not start says why here), then the run's own reason. Empty for
 * a succeeded run.
 */
export function runReason(run: Rendered): string {
  if (run.state === RunState.succeeded) return '';
  const failed = failureReason(run);
  if (failed !== undefined) return failed;
  const attempts = (run.attempts as Rendered[] | undefined) ?? [];
  const last = attempts.at(-1);
  const parts: string[] = [];
  if (
    last !== undefined &&
    !UNSETTLED.has(String(last.state)) &&
    last.state !== AttemptState.succeeded &&
    typeof last.stateReason === 'string'
  ) {
    parts.push(`attempt ${String(last.attemptNumber)} ${String(last.state)}: ${last.stateReason}`);
  }
  if (typeof run.stateReason === 'string' && !parts.some((p) => p.endsWith(run.stateReason as string)))
    parts.push(run.stateReason);
  return parts.join('; ');
}

/**
 * The `history` table: runs newest first, with why each one that did not succeed stands where it does (a run held
 * for retry reads failed, held until its deadline); under it, the newest failed run's failure in full.
 */
export function historyTable(result: Rendered): string {
  const runs = result.runs as Rendered[];
  const lines = [
    table(
      ['run', 'started', 'attempts', 'state', 'reason'],
      runs.map((x) => [
        String(x.runId),
        String(x.startedAt),
        String(x.attemptCount),
        x.hold === undefined ? paint(String(x.state), String(x.state)) : lastResultText(x),
        runReason(x),
      ]),
    ),
  ];
  const newestFailed = runs.find((x) => x.failure !== undefined && x.state !== RunState.succeeded);
  if (newestFailed !== undefined) lines.push(...failureBlock(newestFailed));
  return lines.join('\n');
}
