import { RunState } from '../../machines/index.js';
import type { AttemptFailure } from '../domain/attempt-failure.js';
import { paint } from './format.js';

type Rendered = Record<string, unknown>;

/** A failure as the read commands render it beside a run or attempt (command-handler/failure-view.ts). */
type Failure = AttemptFailure & { attemptNumber: number; reason: string };

interface Hold {
  until: string | null;
  actions: { retry: string; cancel: string };
}

const failureOf = (run: Rendered) => run.failure as Failure | undefined;
const holdOf = (run: Rendered) => run.hold as Hold | undefined;

/** `runtime_error, exit 137 (SIGKILL)`: the class and how the session exited, when it exited. */
export function exitSummary(f: Failure): string {
  const exit = f.exitCode === null ? '' : `, exit ${f.exitCode}${f.signal === undefined ? '' : ` (${f.signal})`}`;
  return `${f.failureClass}${exit}`;
}

/** `held for retry until T` for a held run, else its state; with the failure's class and exit when it has one. */
export function lastResultText(run: Rendered): string {
  const failure = failureOf(run);
  const hold = holdOf(run);
  if (hold !== undefined)
    return (
      `${paint('failed', 'failed')}, held for retry until ${hold.until ?? 'an operator acts'}` +
      (failure === undefined ? '' : ` (${exitSummary(failure)})`)
    );
  const state = String(run.state);
  if (failure === undefined || state === RunState.succeeded) return paint(state, state);
  return `${paint(state, state)} (${exitSummary(failure)})`;
}

/** The last line the session printed that is not blank: for a command that fails, usually why. */
const lastLine = (tail: string | undefined) =>
  tail
    ?.split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .at(-1);

/** One line of why a run failed: class, exit, and the error's message, its output's last line or the reason. */
export function failureReason(run: Rendered): string | undefined {
  const failure = failureOf(run);
  if (failure === undefined) return undefined;
  const why = failure.errorMessage ?? lastLine(failure.outputTail) ?? failure.reason;
  return `attempt ${failure.attemptNumber} failed: ${exitSummary(failure)}: ${why}`;
}

const indent = (text: string, by: string) =>
  text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => `${by}${line}`)
    .join('\n');

/**
 * The block `occurrence` and `history` print under a run that failed: the failure, the error's message, the end
 * of its output, and for a held run until when it is held and the two commands that end the hold.
 */
export function failureBlock(run: Rendered): string[] {
  const failure = failureOf(run);
  if (failure === undefined) return [];
  const hold = holdOf(run);
  const lines = [
    `run ${String(run.runId)}: attempt ${failure.attemptNumber} ${paint('failed', 'failed')} (${exitSummary(failure)})`,
  ];
  lines.push(`  reason  ${failure.reason}`);
  if (failure.errorMessage !== undefined) lines.push(`  error   ${failure.errorMessage}`);
  if (failure.outputTail !== undefined) {
    lines.push(`  output${failure.outputTruncated === true ? ' (its end; coven-automata logs shows all)' : ''}:`);
    lines.push(indent(failure.outputTail, '    | '));
  }
  if (hold !== undefined) {
    lines.push(`  held for retry until ${hold.until ?? 'an operator acts'}`);
    lines.push(`    retry:  ${hold.actions.retry}`);
    lines.push(`    cancel: ${hold.actions.cancel}`);
  }
  return lines;
}
