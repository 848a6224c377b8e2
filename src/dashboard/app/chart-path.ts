import type { DaemonApi } from './api.js';
import { machineOf, transitionOf, type Entity } from './machine-diagram.js';

/** What a chart is of: an entity kind and its id (an attempt also names its run, whose stream holds it). */
export interface ChartRef {
  entity: Entity;
  id: string;
  runId?: string;
}

/** One committed move of the entity, as its changefeed stream recorded it. */
export interface PathStep {
  sequence: number;
  at: string;
  from: string;
  to: string;
  /** The machine event (the engine's recorded reason; for a definition, the event its command sends). */
  on: string;
  /** The contract actor the spec names for this transition, when the machine has the edge. */
  actor: string | undefined;
  /** The engine instance that committed it. */
  producer: string;
  /** The adoption key of the command that caused it, when a command did. */
  adoptionKey: string | undefined;
  summary: string;
}

interface StreamEvent {
  sequence: number;
  kind: string;
  recordedAt: string;
  summary: string;
  attemptId?: string;
  producer?: { instanceId?: string };
  causation?: { adoptionKey?: string };
  payload: Record<string, unknown>;
}

/** A page of one stream; the chart reads its entity's stream in pages of this many events. */
const PAGE = 200;

/** The changefeed stream that holds an entity's moves (an attempt's are on its run's stream). */
export function streamOf(ref: ChartRef): { kind: string; id: string } {
  if (ref.entity === 'definition') return { kind: 'automation', id: ref.id };
  if (ref.entity === 'attempt') return { kind: 'run', id: ref.runId ?? runOfAttempt(ref.id) };
  return { kind: ref.entity, id: ref.id };
}

/** `attempt-<runId>-<n>` → `<runId>` (the engine's attempt ids name their run). */
export function runOfAttempt(attemptId: string): string {
  return attemptId.replace(/^attempt-/, '').replace(/-\d+$/, '');
}

/** The definition event a lifecycle event kind records (the contract's kinds name the command, not the event). */
const DEFINITION_EVENTS: Record<string, string> = {
  'definition.revised': 'definition_revise_committed',
  'definition.activated': 'definition_activated',
  'definition.paused': 'definition_paused',
  'definition.disabled': 'definition_disabled',
  'definition.invalidated': 'definition_invalidated',
  'definition.tombstoned': 'definition_tombstoned',
};

/** The entity's move in one event of its stream, or undefined for an event that moves something else. */
function stepOf(ref: ChartRef, event: StreamEvent, previous: string): Omit<PathStep, 'actor'> | undefined {
  const common = {
    sequence: event.sequence,
    at: event.recordedAt,
    producer: event.producer?.instanceId ?? '—',
    adoptionKey: event.causation?.adoptionKey,
    summary: event.summary,
  };
  if (ref.entity === 'definition') {
    const to = event.payload.lifecycleState;
    if (!event.kind.startsWith('definition.') || typeof to !== 'string') return undefined;
    const created = event.kind === 'definition.created' || event.kind === 'definition.imported';
    // Re-enabling reports itself as a pause (the contract has no kind for it); its edge leaves `disabled`.
    const on = previous === 'disabled' && to === 'paused' ? 'definition_reenabled' : DEFINITION_EVENTS[event.kind];
    return { ...common, from: created ? 'none' : previous, to, on: created ? event.kind : (on ?? event.kind) };
  }
  if (event.kind !== `${ref.entity}.transitioned`) return undefined;
  if (ref.entity === 'attempt' && event.attemptId !== ref.id) return undefined;
  return {
    ...common,
    from: String(event.payload.from),
    to: String(event.payload.to),
    on: String(event.payload.reason ?? ''),
  };
}

/**
 * An entity's path read from its changefeed stream, page by page from a cursor, so a chart that is open
 * reads only what was committed since it last looked.
 */
export class EntityPath {
  readonly steps: PathStep[] = [];
  /** The stream was compacted before the first step shown (retention keeps a snapshot, not every event). */
  compacted = false;
  private after = -1;
  /** The update under way: updates run one after another, so two refreshes never read the same events twice. */
  private pending: Promise<number> = Promise.resolve(0);

  constructor(readonly ref: ChartRef) {}

  /** The state the path ends in, or undefined before any move was read. */
  get last(): string | undefined {
    return this.steps.at(-1)?.to;
  }

  /** Reads what the stream committed after the last event seen; answers how many steps were added. */
  update(api: DaemonApi): Promise<number> {
    const next = this.pending.then(
      () => this.readNew(api),
      () => this.readNew(api),
    );
    this.pending = next;
    return next;
  }

  private async readNew(api: DaemonApi): Promise<number> {
    const machine = machineOf(this.ref.entity);
    const before = this.steps.length;
    for (;;) {
      const page = await api.read<{ events: StreamEvent[] }>('events.read.v1', {
        stream: streamOf(this.ref),
        after: this.after,
        limit: PAGE,
      });
      for (const event of page.events) {
        if (event.sequence <= this.after) continue;
        this.after = event.sequence;
        if (event.kind === 'feed.snapshot') this.compacted = true;
        const step = stepOf(this.ref, event, this.last ?? 'none');
        if (step === undefined) continue;
        // Every definition move is a command's (its creation and an in-place revise have no edge to name it).
        const actor = transitionOf(machine, step.from, step.to, step.on)?.actor;
        this.steps.push({
          ...step,
          actor: actor ?? (this.ref.entity === 'definition' ? 'command_handler' : undefined),
        });
      }
      if (page.events.length < PAGE) return this.steps.length - before;
    }
  }
}
