import {
  ATTEMPT_TERMINAL_STATES,
  OCCURRENCE_TERMINAL_STATES,
  OccurrenceState,
  RUN_TERMINAL_STATES,
  RunState,
} from '../../../machines/index.js';
import { QuarantineState, RunHoldState } from '../../../machines/extension-states.js';
import type { EntityRecord } from '../../actors/entity-transition.js';
import type { EventEnvelope } from '../../changefeed/event-envelope.js';
import { readEventFeed } from '../../changefeed/stored-event.js';
import { quarantineView } from '../../domain/quarantine.js';
import {
  KINDS,
  renderAttempt,
  renderOccurrence,
  renderRun,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../../domain/records.js';
import type { VectorRun } from './vector-session.js';

/** The terminal states of the occurrence, run and attempt machines: the feed names an entity settled on any. */
export const TERMINAL: ReadonlySet<string> = new Set<string>([
  ...OCCURRENCE_TERMINAL_STATES,
  ...RUN_TERMINAL_STATES,
  ...ATTEMPT_TERMINAL_STATES,
]);

/** The reference model's event names, projected from the contract's changefeed. */
function projectEvent(event: EventEnvelope): string | undefined {
  const p = event.payload as { from?: string; to?: string };
  switch (event.kind) {
    case 'definition.created':
    case 'definition.imported':
      return 'definition.created';
    case 'definition.revised':
    case 'definition.activated':
    case 'definition.paused':
    case 'definition.disabled':
      return 'definition.updated';
    case 'definition.tombstoned':
      return 'definition.tombstoned';
    case 'occurrence.transitioned':
      if (p.from === 'none') return 'occurrence.planned';
      if (p.to === OccurrenceState.claimed) return 'occurrence.claimed';
      return TERMINAL.has(p.to ?? '') ? 'occurrence.settled' : undefined;
    case 'run.transitioned':
      if (p.from === RunState.accepted && p.to === RunState.running) return 'run.started';
      return TERMINAL.has(p.to ?? '') ? 'run.finished' : undefined;
    case 'receipt.recorded':
      return 'receipt.sealed';
    case 'authority.refused':
    case 'approval.consumed':
      return event.kind;
    default:
      return undefined;
  }
}

/** Everything the expectations are judged against, read once after the vector's ops ran. */
export async function observe(run: VectorRun) {
  const occurrences = (
    (await run.store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[]
  ).map(
    (o) =>
      ({
        ...renderOccurrence(o),
        attempt: (o.data.snapshot.context as { attemptCount: number }).attemptCount,
      }) as Record<string, unknown>,
  );
  const runs = ((await run.store.read((r) => r.list<RunRecord['data']>(KINDS.run))) as RunRecord[]).map(renderRun);
  const attempts = ((await run.store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt))) as AttemptRecord[]).map(
    renderAttempt,
  );
  const attemptStates = new Map<string, string[]>();
  for (const a of attempts.sort((x, y) => Number(x.attemptNumber) - Number(y.attemptNumber)))
    attemptStates.set(String(a.runId), [...(attemptStates.get(String(a.runId)) ?? []), String(a.state)]);
  const receipts = (await run.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt))).map((r) => r.data);
  const feed = (await run.store.read((r) => readEventFeed(r))).map((e) => e.data);
  const creations = feed.filter((e) => e.kind === 'definition.imported' || e.kind === 'definition.created');
  const projected = [...creations, ...feed.slice(run.setupEnd)]
    .map(projectEvent)
    .filter((k): k is string => k !== undefined);
  const quarantined = (await run.store.read((r) => r.list(KINDS.quarantine)))
    .filter((q) => quarantineView(q).state === QuarantineState.quarantined)
    .map((q) => q.id);
  const heldRuns = (await run.store.read((r) => r.list<EntityRecord<unknown>>(KINDS.runHold)))
    .filter((h) => h.data.snapshot.value === RunHoldState.held)
    .map((h) => h.id);
  return { occurrences, runs, attempts, attemptStates, receipts, feed, projected, quarantined, heldRuns };
}

export type Seen = Awaited<ReturnType<typeof observe>>;
