import { Counter, Gauge, type Registry } from 'prom-client';
import { AttemptState, isAttemptTerminal } from '../../machines/index.js';
import type { EventEnvelope } from '../changefeed/event-envelope.js';
import { attemptFailureView } from '../command-handler/failure-view.js';
import { KINDS, type AttemptRecord } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';

/** The failure class an attempt that did not fail is counted under. */
const NO_FAILURE = 'none';
/** Series present from the first scrape, so a rate over them has a zero to start from. */
const BASELINE: readonly { outcome: string; failure_class: string }[] = [
  { outcome: AttemptState.succeeded, failure_class: NO_FAILURE },
  { outcome: AttemptState.failed, failure_class: 'runtime_error' },
  { outcome: AttemptState.timed_out, failure_class: 'timeout' },
];

/**
 * Counts attempts as they settle, read off the changefeed (an `attempt.transitioned` event into a terminal
 * state), with the failure class the attempt record keeps: the same class every read shows. Answers the feed
 * observer that does the counting.
 */
export function attemptOutcomes(registers: Registry[]): (event: EventEnvelope, reader: StoreReader) => Promise<void> {
  const finished = new Counter({
    name: 'coven_attempts_finished_total',
    help:
      'Attempts that reached a terminal state since the metrics started, by outcome (the attempt state) and ' +
      `failure class (${NO_FAILURE} for an attempt that did not fail)`,
    labelNames: ['outcome', 'failure_class'],
    registers,
  });
  for (const labels of BASELINE) finished.inc(labels, 0);
  return async (event, reader) => {
    if (event.kind !== 'attempt.transitioned' || event.attemptId === undefined) return;
    const outcome = String(event.payload.to);
    if (!isAttemptTerminal(outcome)) return;
    const attempt = (await reader.get<AttemptRecord['data']>(KINDS.attempt, event.attemptId)) as
      AttemptRecord | undefined;
    // Retention may have compacted the attempt before this scan read it: its class is then no longer known.
    const failureClass = attempt === undefined ? undefined : attemptFailureView(attempt)?.failureClass;
    const known = attempt === undefined && outcome !== AttemptState.succeeded ? 'unknown' : NO_FAILURE;
    finished.inc({ outcome, failure_class: failureClass ?? known });
  };
}

/** Gauges of the runs held for an operator retry: read from the store at scrape time like the other gauges. */
export function heldRunGauges(registers: Registry[], collect: () => Promise<void>) {
  return {
    held: new Gauge({
      name: 'coven_runs_held',
      help: 'Runs whose attempt failed and that wait for an operator retry or cancel (the contract keeps them running)',
      registers,
      collect,
    }),
    oldestHeld: new Gauge({
      name: 'coven_oldest_held_run_age_seconds',
      help: 'Time since the hold of the longest-held run opened; 0 when none is held',
      registers,
      collect,
    }),
  };
}

export type HeldRunGauges = ReturnType<typeof heldRunGauges>;

/** Sets the held-run gauges from the holds of runs that are still running, measured at `now` (ms). */
export function setHeldRuns(gauges: HeldRunGauges, holds: Iterable<{ since: string | null }>, now: number): void {
  let count = 0;
  let oldest = Infinity;
  for (const hold of holds) {
    count += 1;
    if (hold.since !== null) oldest = Math.min(oldest, Date.parse(hold.since));
  }
  gauges.held.set(count);
  gauges.oldestHeld.set(oldest === Infinity ? 0 : Math.max(0, now - oldest) / 1000);
}
