import { ATTEMPT_TERMINAL_STATES, OCCURRENCE_TERMINAL_STATES, RUN_TERMINAL_STATES } from '../../../machines/index.js';
import type { EventEnvelope } from '../../changefeed/event-envelope.js';
import type { StoredRecord } from '../../store/store.js';
import type { History } from './history.js';

export type Rec = StoredRecord<Record<string, unknown>>;
export type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One checked invariant: a named rule over the store's history and the runtime's log. */
export interface InvariantCheck {
  id: string;
  /** `contract`: one of the ten; `conformance`: a hard gate of upstream's conformance plane. */
  source: 'contract' | 'conformance';
  check(current: History, previous: History | undefined): string[];
}

/** Terminal states per execution entity; the accessors below read the stored records the checks compare. */
export const TERMINAL: Record<string, ReadonlySet<string>> = {
  occurrence: OCCURRENCE_TERMINAL_STATES,
  run: RUN_TERMINAL_STATES,
  attempt: ATTEMPT_TERMINAL_STATES,
};

export const state = (r: Rec | undefined) => (r?.data as Any | undefined)?.snapshot?.value as string | undefined;
export const attrs = (r: Rec) => (r.data as Any).attributes as Any;
export const ctx = (r: Rec) => (r.data as Any).snapshot.context as Any;
export const same = (a: Rec, b: Rec) => a.version === b.version && JSON.stringify(a.data) === JSON.stringify(b.data);

/** Transition events in feed order, each with its global position (what launches and passes compare with). */
export function transitions(h: History): Array<{ position: number; event: EventEnvelope; entityId: string }> {
  const out = [];
  for (const [index, event] of h.feed.entries()) {
    if (!event.kind.endsWith('.transitioned')) continue;
    const entity = event.payload.entity as string;
    const entityId = entity === 'attempt' ? event.attemptId! : entity === 'run' ? event.runId! : event.occurrenceId!;
    out.push({ position: h.positions[index]!, event, entityId });
  }
  return out;
}

export function attemptsOfRun(h: History, runId: string): Rec[] {
  return [...h.records.attempt.values()]
    .filter((a) => ctx(a).runId === runId)
    .sort((a, b) => ctx(a).attemptNumber - ctx(b).attemptNumber);
}
