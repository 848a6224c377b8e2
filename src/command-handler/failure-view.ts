import { RunHoldState } from '../../machines/extension-states.js';
import { AttemptState } from '../../machines/index.js';
import type { EntityRecord } from '../actors/entity-transition.js';
import { redactText } from '../contract/redaction.js';
import type { AttemptFailure } from '../domain/attempt-failure.js';
import { isRunHeld } from '../domain/run-hold.js';
import {
  KINDS,
  runContext,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { RunHoldContext } from '../guards/run-hold.js';
import type { StoreReader } from '../store/store.js';

/** What every reader shows of a failed attempt: why, how it exited, what it said. */
export interface FailureView extends AttemptFailure {
  attemptId: string;
  attemptNumber: number;
  /** The attempt's own reason (a refused launch's detail, `verified failure evidence (exit 3)`). */
  reason: string;
}

/** A run held for an operator retry: until when, and the commands that end the hold either way. */
export interface HoldView {
  heldSince: string | null;
  /** The run's deadline: the hold ends there (the run then times out) unless an operator acts first. */
  until: string | null;
  actions: { retry: string; cancel: string };
}

const FAILED_ATTEMPT: ReadonlySet<string> = new Set([
  AttemptState.failed,
  AttemptState.timed_out,
  AttemptState.ambiguous,
]);

function classOf(attempt: AttemptRecord): string {
  const a = attempt.data.attributes;
  if (a.failure !== undefined) return a.failure.failureClass;
  if (a.failureClass !== undefined) return a.failureClass;
  const state = stateOf(attempt);
  return state === AttemptState.timed_out
    ? 'timeout'
    : state === AttemptState.ambiguous
      ? 'ambiguous'
      : 'runtime_error';
}

/**
 * The failure of an attempt that ended failed, timed out or ambiguous; undefined for any other. Text the session
 * produced passes the published-view redaction (credentials and absolute paths), whoever reads it.
 */
export function attemptFailureView(attempt: AttemptRecord): FailureView | undefined {
  if (!FAILED_ATTEMPT.has(stateOf(attempt))) return undefined;
  const a = attempt.data.attributes;
  const f = a.failure;
  const exitCode = f?.exitCode ?? a.evidence?.exitCode ?? null;
  return {
    attemptId: attempt.id,
    attemptNumber: (attempt.data.snapshot.context as { attemptNumber: number }).attemptNumber,
    failureClass: classOf(attempt),
    exitCode,
    ...(f?.signal === undefined ? {} : { signal: f.signal }),
    ...(f?.errorMessage === undefined ? {} : { errorMessage: redactText(f.errorMessage) }),
    ...(f?.outputTail === undefined ? {} : { outputTail: redactText(f.outputTail) }),
    ...(f?.outputTruncated === true ? { outputTruncated: true } : {}),
    reason: a.stateReason,
  };
}

/** The hold of a run, when its occurrence holds it for an operator retry now. */
export async function runHoldView(reader: StoreReader, run: RunRecord): Promise<HoldView | undefined> {
  const occurrenceId = runContext(run).occurrenceId;
  const occurrence = (await reader.get(KINDS.occurrence, occurrenceId)) as OccurrenceRecord | undefined;
  if (occurrence === undefined || occurrence.data.attributes.activeRunRef !== run.id) return undefined;
  if (!(await isRunHeld(reader, occurrence))) return undefined;
  const hold = await reader.get<EntityRecord<unknown>>(KINDS.runHold, run.id);
  const context =
    hold?.data.snapshot.value === RunHoldState.held
      ? (hold.data.snapshot.context as unknown as RunHoldContext)
      : undefined;
  return {
    heldSince: context?.heldSince ?? null,
    until: context?.deadlineAt ?? runContext(run).deadlineAt ?? null,
    actions: { retry: `coven-automata retry ${run.id}`, cancel: `coven-automata cancel ${occurrenceId}` },
  };
}

/**
 * The fields a read adds beside a rendered run: `failure`, the latest failed attempt's (a run held for retry is
 * `running` by the contract, yet its attempt failed), and `hold` while the run waits for an operator retry.
 */
export async function runFailureFields(
  reader: StoreReader,
  run: RunRecord,
  attempts: readonly AttemptRecord[],
): Promise<{ failure?: FailureView; hold?: HoldView }> {
  const latest = attempts.at(-1);
  const failure = latest === undefined ? undefined : attemptFailureView(latest);
  const hold = await runHoldView(reader, run);
  return { ...(failure === undefined ? {} : { failure }), ...(hold === undefined ? {} : { hold }) };
}
