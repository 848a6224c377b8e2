import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  AttemptState,
  isAttemptTerminal,
  isOccurrenceTerminal,
  isRunTerminal,
  OccurrenceState,
  RunState,
} from '../../machines/index.js';
import type { CommitTracing, CommittedTransition } from '../domain/inspection.js';
import { occurrenceSpanIdOf, traceIdOf } from '../runtime/trace-context.js';

/** Spans a tracer keeps open (a dispatch, a run) at most; past that the oldest is ended, marked unfinished. */
const MAX_OPEN_SPANS = 10_000;

/** The tracer `openTelemetryTracing` uses unless given one: the global provider's. */
export const TRACER_NAME = 'coven-automata';

/** The tracing an engine option `tracing` takes, with what it holds open (for tests and metrics). */
export interface OpenTelemetryTracing extends CommitTracing {
  /** Dispatch and run spans started by this engine and not ended yet. */
  openSpans(): number;
}

/** The occurrence's trace as a parent: every span of one occurrence joins it, whichever engine commits it. */
function parentOf(occurrenceId: string): Context {
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: traceIdOf(occurrenceId),
    spanId: occurrenceSpanIdOf(occurrenceId),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

function attributesOf(t: CommittedTransition, automationId: string | undefined): Attributes {
  const c = t.context;
  const text = (key: string) => (typeof c[key] === 'string' ? (c[key] as string) : undefined);
  const attributes: Attributes = {
    'coven.entity': t.entity,
    'coven.transition.from': t.from,
    'coven.transition.to': t.to,
    'coven.transition.event': t.event.type,
  };
  for (const [key, name] of [
    ['automationId', 'coven.automation_id'],
    ['occurrenceId', 'coven.occurrence_id'],
    ['runId', 'coven.run_id'],
  ] as const) {
    const value = text(key);
    if (value !== undefined) attributes[name] = value;
  }
  if (t.entity === 'attempt') attributes['coven.attempt_id'] = t.id;
  // An attempt's context does not name its automation; its occurrence's transitions did.
  if (attributes['coven.automation_id'] === undefined && automationId !== undefined)
    attributes['coven.automation_id'] = automationId;
  return attributes;
}

/** Failure or success as a span's status: a phase that ended anywhere but success is an error. */
const statusOf = (succeeded: boolean, to: string) =>
  succeeded ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: to };

/**
 * OpenTelemetry spans for each occurrence, made from the transitions the engine commits: `coven.plan` and
 * `coven.claim` (instants), `coven.dispatch` (from the launch's commit until the runtime started the session or
 * refused it), `coven.run` (from its start until it settles) and `coven.settle` (the occurrence's terminal state).
 * All of one occurrence share a trace whose ids come from the occurrence id (see trace-context.ts), so spans
 * committed by different engines, and the `TRACEPARENT` a runtime passes to the child process, join one trace.
 * A dispatch or run that started on another engine (or before a restart) is recorded as an instant when it ends.
 * Loaded only by this subpath: an engine without the `tracing` option never imports `@opentelemetry/api`.
 *
 * @example
 * ```ts
 * import { createEngine } from 'coven-automata';
 * import { openTelemetryTracing } from 'coven-automata/otel';
 *
 * const engine = createEngine({ store, runtimes, tracing: openTelemetryTracing() });
 * ```
 */
export function openTelemetryTracing(tracer: Tracer = trace.getTracer(TRACER_NAME)): OpenTelemetryTracing {
  const open = new Map<string, Span>();
  /** The automation of each occurrence this engine saw a transition of, for the attempts' spans (bounded). */
  const automations = new Map<string, string>();
  const attributes = (t: CommittedTransition, occurrenceId: string) => attributesOf(t, automations.get(occurrenceId));
  const learn = (occurrenceId: string, automationId: unknown) => {
    if (typeof automationId !== 'string' || automations.has(occurrenceId)) return;
    if (automations.size >= MAX_OPEN_SPANS) automations.delete(automations.keys().next().value!);
    automations.set(occurrenceId, automationId);
  };
  const start = (key: string, name: string, t: CommittedTransition, occurrenceId: string) => {
    if (open.size >= MAX_OPEN_SPANS) {
      const [oldest, span] = open.entries().next().value!;
      span.setAttribute('coven.unfinished', true);
      span.end();
      open.delete(oldest);
    }
    open.set(key, tracer.startSpan(name, { attributes: attributes(t, occurrenceId) }, parentOf(occurrenceId)));
  };
  const end = (key: string, name: string, t: CommittedTransition, occurrenceId: string, succeeded: boolean) => {
    const span =
      open.get(key) ?? tracer.startSpan(name, { attributes: attributes(t, occurrenceId) }, parentOf(occurrenceId));
    open.delete(key);
    span.setAttribute('coven.transition.to', t.to);
    span.setStatus(statusOf(succeeded, t.to));
    span.end();
  };
  const instant = (name: string, t: CommittedTransition, occurrenceId: string, succeeded = true) => {
    const span = tracer.startSpan(name, { attributes: attributes(t, occurrenceId) }, parentOf(occurrenceId));
    span.setStatus(statusOf(succeeded, t.to));
    span.end();
  };
  const one = (t: CommittedTransition) => {
    const occurrenceId = t.entity === 'occurrence' ? t.id : (t.context.occurrenceId as string | undefined);
    if (occurrenceId === undefined) return;
    learn(occurrenceId, t.context.automationId);
    if (t.entity === 'occurrence') {
      if (t.to === OccurrenceState.planned) instant('coven.plan', t, occurrenceId);
      else if (t.to === OccurrenceState.claimed) instant('coven.claim', t, occurrenceId);
      else if (isOccurrenceTerminal(t.to)) instant('coven.settle', t, occurrenceId, t.to === OccurrenceState.succeeded);
    } else if (t.entity === 'attempt') {
      if (t.to === AttemptState.dispatching) start(`dispatch:${t.id}`, 'coven.dispatch', t, occurrenceId);
      else if (t.from === AttemptState.dispatching)
        end(`dispatch:${t.id}`, 'coven.dispatch', t, occurrenceId, !isAttemptTerminal(t.to));
    } else if (t.entity === 'run') {
      if (t.to === RunState.running && t.from !== RunState.running) start(`run:${t.id}`, 'coven.run', t, occurrenceId);
      else if (isRunTerminal(t.to)) end(`run:${t.id}`, 'coven.run', t, occurrenceId, t.to === RunState.succeeded);
    }
  };
  return {
    committed(transitions) {
      for (const t of transitions) {
        try {
          one(t);
        } catch {
          // A tracer that throws must not fail the engine's step: the commit is already durable.
        }
      }
    },
    openSpans: () => open.size,
  };
}
