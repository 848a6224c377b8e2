import { createEngine } from '../../src/engine/engine.js';
import type { CommitTracing } from '../../src/domain/inspection.js';
import { extensionTrigger, SCHEDULE_EXTENSION, type ScheduleExtension } from '../../src/schedule/schedule-extension.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { SimulatedRuntime, type SimulatedBehavior } from '../../src/runtime/simulated-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { OutputDelivery } from '../../src/runtime/output-delivery.js';
import type { EventEnvelope, StreamRef } from '../../src/changefeed/event-envelope.js';
import { readEventFeed, readEventLog } from '../../src/changefeed/stored-event.js';
import {
  KINDS,
  renderAttempt,
  renderOccurrence,
  renderRun,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../../src/domain/records.js';
import { command, definitionBody } from './commands.js';
import type { RetentionOptions } from '../../src/retention/policy.js';
import { expect } from 'vitest';

export interface HarnessOptions<R extends Runtime = SimulatedRuntime> {
  start?: string;
  store?: Store;
  /** The engine's one runtime (default: a SimulatedRuntime whose sessions run a minute). */
  runtime?: R;
  retry?: Record<string, unknown>;
  perRunMinutes?: number;
  rrule?: string;
  timezone?: string;
  /** An x-coven-automata.schedule.v1 body: the definition is scheduled by it instead of `rrule`. */
  schedule?: ScheduleExtension;
  /** More definition extensions (the overlap extension, say), beside `x-test` and the schedule's. */
  extensions?: Record<string, unknown>;
  instanceId?: string;
  activate?: boolean;
  retention?: RetentionOptions | false;
  /** The definition's `policies.retention` (default: occurrence history `standard`). */
  retentionClasses?: Record<string, { classification: string }>;
  /** The engine's delivery port, for definitions with an atomic outputTarget. */
  delivery?: OutputDelivery;
  /** The definition's atomic `policies.delivery.outputTarget` (default: none). */
  outputTarget?: string;
  /** The engine option `tracing`. */
  tracing?: CommitTracing;
}

/**
 * The trigger and extensions of a definition scheduled by the schedule extension, with `more` extensions beside
 * it (nothing when neither is given).
 */
export function scheduledBy(
  schedule: ScheduleExtension | undefined,
  more?: Record<string, unknown>,
): { trigger?: ReturnType<typeof extensionTrigger>; extensions?: Record<string, unknown> } {
  const extensions = { 'x-test': { kept: true }, ...more };
  if (schedule === undefined) return more === undefined ? {} : { extensions };
  return {
    trigger: extensionTrigger(schedule.timezone),
    extensions: { ...extensions, [SCHEDULE_EXTENSION]: schedule },
  };
}

/** An engine on a simulated clock and runtime, with one automation `daily` created and activated. */
export async function harness<R extends Runtime = SimulatedRuntime>(options: HarnessOptions<R> = {}) {
  const clock = new SimulatedClock(options.start ?? '2026-03-02T08:00:00.000Z');
  const store = options.store ?? new MemoryStore();
  const runtime = options.runtime ?? (new SimulatedRuntime({ durationMs: 60_000 }) as unknown as R);
  let ids = 0;
  const engine = createEngine({
    store,
    clock,
    runtimes: [runtime],
    instanceId: options.instanceId ?? 'engine-a',
    newId: () => `store-${++ids}`,
    ...(options.retention === undefined ? {} : { retention: options.retention }),
    ...(options.delivery === undefined ? {} : { delivery: options.delivery }),
    ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
  });
  const policies = {
    timeout: { perRunMinutes: options.perRunMinutes ?? 30 },
    retry: options.retry ?? {
      maxAttempts: 3,
      backoffPolicy: 'fixed',
      backoffSeconds: 30,
      retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
    },
    concurrency: { overlap: 'forbid' },
    misfire: { disposition: 'latest' },
    retention: options.retentionClasses ?? { occurrenceHistory: { classification: 'standard' } },
    ...(options.outputTarget === undefined ? {} : { delivery: { outputTarget: options.outputTarget, mode: 'atomic' } }),
  };
  const body = (revision: number, lifecycleState: 'draft' | 'paused') =>
    definitionBody('daily', {
      revision,
      lifecycleState,
      rrule: options.rrule ?? 'FREQ=DAILY;BYHOUR=9',
      timezone: options.timezone ?? 'utc',
      extra: { policies, ...scheduledBy(options.schedule, options.extensions) },
    });
  const ok = async (input: unknown) => {
    const r = await engine.commands.handle(input);
    expect(r.outcome, JSON.stringify(r.error)).not.toBe('rejected');
    return r;
  };
  // A store handed in may already hold the automation (a restart); a new one gets it created.
  if ((await store.read((r) => r.get('definition', 'daily'))) === undefined) {
    await ok(command('definition.create.v1', { definition: body(1, 'draft') }));
    await ok(command('definition.revise.v1', { definition: body(2, 'paused') }, { expectedRevision: 1 }));
    if (options.activate !== false)
      await ok(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 2 }));
  }
  const read = {
    occurrences: async () =>
      ((await store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[]).map(
        renderOccurrence,
      ),
    runs: async () => ((await store.read((r) => r.list<RunRecord['data']>(KINDS.run))) as RunRecord[]).map(renderRun),
    attempts: async () =>
      ((await store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt))) as AttemptRecord[]).map(renderAttempt),
    receipts: async () => (await store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt))).map((r) => r.data),
    feed: async () => (await store.read((r) => readEventFeed(r))).map((e) => e.data),
    stream: async (kind: string, id: string) =>
      (await store.read((r) => readEventLog(r, { kind, id } as StreamRef))).map((e) => e.data),
  };
  return { clock, store, runtime, engine, ok, read, body };
}

export type Harness = Awaited<ReturnType<typeof harness<SimulatedRuntime>>>;

export function transitions(events: EventEnvelope[]): string[] {
  return events
    .filter((e) => e.kind.endsWith('.transitioned'))
    .map((e) => `${String(e.payload.from)}->${String(e.payload.to)}`);
}

export type { SimulatedBehavior };
