import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, test } from 'vitest';
import { openTelemetryTracing } from '../../src/observability/otel.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { occurrenceSpanIdOf, traceIdOf, traceparentOf } from '../../src/runtime/trace-context.js';
import type { LaunchRequest } from '../../src/runtime/runtime.js';
import { eventually } from '../support/eventually.js';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { launchRequests } from '../support/launch-request.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-otel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A tracer whose finished spans are kept in memory, as a test exporter keeps them. */
function recordingTracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer('coven-automata-test'), spans: () => exporter.getFinishedSpans() };
}

/** The parent span id of a finished span (sdk 2.x names it parentSpanContext). */
const parentOf = (span: ReadableSpan) =>
  (span as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId;

/** An occurrence's spans, from plan to settle, in name order. */
const EVERY_PHASE = ['coven.claim', 'coven.dispatch', 'coven.plan', 'coven.run', 'coven.settle'];

describe('OpenTelemetry traces (coven-automata/otel)', () => {
  test("an occurrence's plan, claim, dispatch, run and settle are spans of one trace, named from its id", async () => {
    const { tracer, spans } = recordingTracer();
    const tracing = openTelemetryTracing(tracer);
    const h = await harness({ tracing });
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    h.clock.advance({ minutes: 2 });
    await h.engine.tick();
    const [occurrence] = await h.read.occurrences();
    const occurrenceId = String(occurrence!.occurrenceId);
    expect(occurrence!.state).toBe('succeeded');
    const finished = spans();
    // A commit's transitions end their spans in the order the commit lists them (the run and the occurrence settle
    // in one commit), so the names are compared as a set.
    expect(finished.map((s) => s.name).sort()).toEqual(EVERY_PHASE);
    for (const span of finished) {
      expect(span.spanContext().traceId).toBe(traceIdOf(occurrenceId));
      expect(parentOf(span)).toBe(occurrenceSpanIdOf(occurrenceId));
      expect(span.attributes['coven.occurrence_id']).toBe(occurrenceId);
      expect(span.attributes['coven.automation_id']).toBe('daily');
      expect(span.status.code).toBe(1); // OK
    }
    const run = finished.find((s) => s.name === 'coven.run')!;
    expect(run.attributes['coven.transition.to']).toBe('succeeded');
    expect(tracing.openSpans()).toBe(0);
  });

  test("a command's transitions are spans too: a run-now's plan and claim, then its run, in the occurrence's trace", async () => {
    const { tracer, spans } = recordingTracer();
    const h = await harness({ tracing: openTelemetryTracing(tracer) });
    const response = await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
    // The command's commit planned and claimed it; its launch, sent after the commit, started the session.
    const occurrenceId = String(response.result!.occurrenceId);
    expect(
      spans()
        .map((s) => s.name)
        .sort(),
    ).toEqual(['coven.claim', 'coven.dispatch', 'coven.plan']);
    h.clock.advance({ minutes: 2 });
    await h.engine.tick();
    const finished = spans();
    expect(finished.map((s) => s.name).sort()).toEqual(EVERY_PHASE);
    for (const span of finished) expect(span.spanContext().traceId).toBe(traceIdOf(occurrenceId));
    // A refused command made no transition and no span.
    expect((await h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'nope' }))).outcome).toBe(
      'rejected',
    );
    expect(spans()).toHaveLength(5);
  });

  test('a failed run and its occurrence are error spans', async () => {
    const { tracer, spans } = recordingTracer();
    const h = await harness({
      tracing: openTelemetryTracing(tracer),
      retry: { maxAttempts: 1, backoffPolicy: 'none' },
      runtime: new SimulatedRuntime({ durationMs: 60_000, defaultBehavior: 'fail' }),
    });
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    // The failed attempt's run is held for an operator retry until its deadline (30 minutes), then fails.
    for (let step = 0; step < 12 && (await h.read.occurrences())[0]?.state !== 'failed'; step++) {
      h.clock.advance({ minutes: 5 });
      await h.engine.tick();
    }
    const byName = new Map(spans().map((s) => [s.name, s]));
    expect(byName.get('coven.run')!.status).toMatchObject({ code: 2, message: 'failed' });
    expect(byName.get('coven.settle')!.status).toMatchObject({ code: 2, message: 'failed' });
  });

  test('runtimes pass the trace on: a function gets request.traceparent, a child process $TRACEPARENT', async () => {
    const request = launchRequests((n) => `attempt-${n}#1`)();
    const seen: LaunchRequest[] = [];
    const fn = new FunctionRuntime('fn', async (r) => {
      seen.push(r);
      return { outcome: 'succeeded' };
    });
    fn.traceContext = true;
    await fn.launch(request, new Date());
    await eventually(async () => (seen.length > 0 ? true : undefined));
    expect(seen[0]!.traceparent).toBe(traceparentOf(request.occurrenceId));
    expect(traceparentOf(request.occurrenceId)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const out = join(dir, 'traceparent.txt');
    const child = new ChildProcessRuntime({
      runtimeId: 'sh',
      command: `printf "%s" "$TRACEPARENT" > ${out}`,
      sessionsDir: join(dir, 'sessions'),
      defaultCwd: dir,
      traceContext: true,
    });
    const launched = (await child.launch(request, new Date())) as { sessionId: string };
    await eventually(async () =>
      (await child.observe(launched.sessionId, new Date())).status === 'exited' ? true : undefined,
    );
    expect(readFileSync(out, 'utf8')).toBe(traceparentOf(request.occurrenceId));

    const plain = new ChildProcessRuntime({
      runtimeId: 'sh',
      command: `printf "%s" "\${TRACEPARENT:-none}" > ${out}`,
      sessionsDir: join(dir, 'sessions-plain'),
      defaultCwd: dir,
    });
    const again = (await plain.launch(launchRequests((n) => `attempt-${n}#2`)(), new Date())) as { sessionId: string };
    await eventually(async () =>
      (await plain.observe(again.sessionId, new Date())).status === 'exited' ? true : undefined,
    );
    expect(readFileSync(out, 'utf8')).toBe('none');
  });
});
