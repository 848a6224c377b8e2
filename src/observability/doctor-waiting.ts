import { OccurrenceState } from '../../machines/index.js';
import type { DoctorView, OccurrenceView } from './doctor-view.js';

/** Occurrence states that wait to be claimed. */
export const WAITING: ReadonlySet<string> = new Set<string>([OccurrenceState.planned, OccurrenceState.eligible]);

/** Automations with an occurrence not yet terminal: their slots that wait while they are busy are not late. */
export function busyAutomations(view: DoctorView): Set<string> {
  return new Set(view.occurrences.map((o) => o.automationId));
}

/**
 * A waiting occurrence that waits by policy (backfilled, or its definition's slots wait while it is busy) behind
 * other work of its automation: a live run, or an older waiting slot. The head of such a queue is judged as any
 * other occurrence.
 */
export function waitsItsTurn(view: DoctorView, o: OccurrenceView): boolean {
  const policy =
    o.backfill === true || view.definitions.some((d) => d.automationId === o.automationId && d.waitsWhileBusy);
  return (
    policy &&
    view.occurrences.some(
      (other) =>
        other.automationId === o.automationId &&
        other.occurrenceId !== o.occurrenceId &&
        (!WAITING.has(other.state) || other.scheduledFor < o.scheduledFor),
    )
  );
}

/** An occurrence a flow gate holds back (x-coven-automata.limits.v1): waiting on a cap or rate limit is not stuck. */
export function waitsAtLimit(view: DoctorView, o: OccurrenceView): boolean {
  return view.waitingAtLimits?.includes(o.occurrenceId) === true;
}
