import { integrityOf, verifyIntegrity } from '../contract/digest.js';
import type { EventEnvelope } from '../changefeed/event-envelope.js';
import type { CommandResponse } from '../command-handler/envelope.js';
import { SimulatedClock } from '../clock/clock.js';
import { createEngine, type Engine } from '../engine/engine.js';
import {
  KINDS,
  renderAttempt,
  renderOccurrence,
  renderRun,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import { SimulatedRuntime } from '../runtime/simulated-runtime.js';
import { openStore, removeFileStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { paint, table } from './format.js';

const AUTOMATION = 'daily-notes';

function definition(revision: number, lifecycleState: string, hour: number): Record<string, unknown> {
  const body: Record<string, unknown> = {
    schemaVersion: 'coven.automations.v1',
    automationId: AUTOMATION,
    revision,
    lifecycleState,
    display: { name: 'Daily notes', description: 'Write the daily reflection.', tags: ['notes'] },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule: `FREQ=DAILY;BYHOUR=${hour}`, timezone: 'utc' } },
    conditions: [],
    action: { variant: 'familiarInvocation', version: 1, prompt: 'Write the daily reflection.' },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://authority/familiars/charm' },
    },
    runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: {
        maxAttempts: 3,
        backoffPolicy: 'fixed',
        backoffSeconds: 60,
        retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
      },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId: 'principal:demo' } },
  };
  return { ...body, integrity: integrityOf(body) };
}

interface DemoContext {
  engine: Engine;
  store: Store;
  clock: SimulatedClock;
  runtime: SimulatedRuntime;
  print: (...lines: string[]) => void;
  cursor: number;
  keys: number;
}

function describeEvent(e: EventEnvelope): string {
  const p = e.payload as Record<string, unknown>;
  const what = e.kind.endsWith('.transitioned')
    ? `${String(p.entity).padEnd(10)} ${String(p.from)} → ${paint(String(p.to), String(p.to))}`
    : e.kind === 'receipt.recorded'
      ? `receipt    ${String(p.receiptRef)} (${String(p.outcome)})`
      : e.kind === 'occurrence.misfire_recorded'
        ? `misfire    ${(p.collapsedSlots as string[]).length} slot(s) collapsed`
        : `${e.kind.padEnd(10)} revision ${String(p.revision)} ${String(p.lifecycleState ?? '')}`;
  const when = e.recordedAt.slice(5, 16).replace('T', ' ');
  return `  ${paint('dim', `#${String(e.sequence).padStart(2)} ${when}`)} ${what}`;
}

/** Prints every changefeed event committed since the last call, in commit order. */
async function flush(ctx: DemoContext): Promise<void> {
  const page = await ctx.engine.commands.changefeed.read(
    { kind: 'feed', id: 'all' },
    { after: ctx.cursor, limit: 1000 },
  );
  for (const e of page.events) ctx.print(describeEvent(e));
  ctx.cursor = page.nextAfter ?? ctx.cursor;
}

async function send(
  ctx: DemoContext,
  command: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Promise<CommandResponse> {
  const response = await ctx.engine.commands.handle({
    schemaVersion: 'coven.automations.v1',
    command,
    adoptionKey: `demo-${command.split('.')[1]}-${String(++ctx.keys).padStart(4, '0')}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'principal:demo' }, channel: 'cli' },
    intent: { statement: `demo: ${command}` },
    payload,
  });
  const verdict =
    response.outcome === 'rejected'
      ? `${response.error!.code} (${response.error!.httpStatus}) ${response.error!.message}`
      : response.outcome;
  const painted = response.outcome === 'rejected' ? paint('failed', verdict) : paint('succeeded', verdict);
  ctx.print(`${paint('bold', '$')} ${command} → ${painted}`);
  await flush(ctx);
  return response;
}

async function passAt(ctx: DemoContext, instant: string, note: string): Promise<void> {
  ctx.clock.set(instant);
  ctx.print(`${paint('bold', `⏱  ${instant.replace('T', ' ').slice(0, 16)}`)}  ${note}`);
  await ctx.engine.tick();
  await flush(ctx);
}

async function liveOccurrence(ctx: DemoContext): Promise<string> {
  const live = await ctx.store.read((r) => r.liveWork('occurrence'));
  return live[0]!.id;
}

export interface DemoOptions {
  /** Attaches an observer to the demo's engine; the demo awaits its detach before it closes the store. */
  attach?: (engine: Engine) => Promise<() => Promise<void>>;
}

/**
 * The README's main job: a daily automation on a fresh JSON store, driven by a simulated clock across four
 * days — a transient launch failure retried automatically, a lost runtime recovered by the operator, a
 * cancellation acknowledged by the runtime, and a revision — printing the changefeed as it is committed,
 * then a summary with every receipt verified.
 */
export async function runDemo(
  file: string,
  print: (...lines: string[]) => void,
  options: DemoOptions = {},
): Promise<{ receipts: number; verified: number }> {
  removeFileStore(file);
  const store = await openStore(file);
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 5 * 60_000 });
  let ids = 0;
  const engine = createEngine({
    store,
    clock,
    runtimes: [runtime],
    instanceId: 'demo-engine',
    newId: () => `demo-store-${++ids}`,
  });
  const ctx: DemoContext = { engine, store, clock, runtime, print, cursor: -1, keys: 0 };
  let detach: (() => Promise<void>) | undefined;
  try {
    detach = await options.attach?.(engine);
    print(paint('bold', `coven-automata demo — store ${file}, simulated clock, simulated runtime`), '');
    await send(ctx, 'definition.create.v1', { definition: definition(1, 'draft', 9) });
    await send(ctx, 'definition.revise.v1', { definition: definition(2, 'paused', 9) }, 1);
    await send(ctx, 'definition.activate.v1', { automationId: AUTOMATION }, 2);

    print('', paint('bold', 'Day 1 — the runtime is unavailable at first; the pinned policy retries after 60 s'));
    runtime.enqueue('unavailable', 'succeed');
    await passAt(ctx, '2026-03-02T09:00:00.000Z', 'slot due; launch fails before ownership');
    await passAt(ctx, '2026-03-02T09:01:00.000Z', 'backoff over; attempt 2 launches');
    await passAt(ctx, '2026-03-02T09:06:00.000Z', 'the worker observes the exit');

    print('', paint('bold', 'Day 2 — the session vanishes after its side effect: only an operator may decide'));
    runtime.enqueue('lost-after-side-effect', 'succeed');
    await passAt(ctx, '2026-03-03T09:00:00.000Z', 'slot due; launched');
    await passAt(ctx, '2026-03-03T09:06:00.000Z', 'the runtime reports the session lost');
    const lost = await liveOccurrence(ctx);
    await send(ctx, 'occurrence.recover.v1', {
      occurrenceId: lost,
      evidenceDetermination: 'retry_with_new_attempt',
      statement: 'Checked the notes: today’s entry is missing, safe to run again.',
    });
    await passAt(ctx, '2026-03-03T09:12:00.000Z', 'the recovery attempt finishes');

    print('', paint('bold', 'Day 3 — a run hangs; cancellation is a request until the runtime acknowledges'));
    runtime.enqueue('hang');
    await passAt(ctx, '2026-03-04T09:00:00.000Z', 'slot due; launched');
    const hanging = await liveOccurrence(ctx);
    await send(ctx, 'occurrence.cancel.v1', { occurrenceId: hanging, reason: 'stuck; stopping it' });
    await passAt(ctx, '2026-03-04T09:01:00.000Z', 'the runtime acknowledges the stop');

    print('', paint('bold', 'Day 4 — a revision moves the slot to 10:00; history keeps its pinned revisions'));
    clock.set('2026-03-05T08:00:00.000Z');
    const current = (await send(ctx, 'definition.get.v1', { automationId: AUTOMATION })).result!.revision as number;
    await send(ctx, 'definition.revise.v1', { definition: definition(current + 1, 'active', 10) }, current);
    await passAt(ctx, '2026-03-05T09:00:00.000Z', 'old slot: nothing planned');
    await passAt(ctx, '2026-03-05T10:00:00.000Z', 'new slot due; launched');
    await passAt(ctx, '2026-03-05T10:06:00.000Z', 'settled');

    return await summary(ctx);
  } finally {
    await detach?.();
    await store.close();
  }
}

/** An attempt's prior disposition as `#<attempt number> <outcome>`, or `-` for a first attempt. */
function priorDisposition(disposition: unknown): string {
  if (disposition === undefined) return '-';
  const { attemptNumber, outcome } = disposition as { attemptNumber: number; outcome: string };
  return `#${String(attemptNumber)} ${String(outcome)}`;
}

async function summary(ctx: DemoContext): Promise<{ receipts: number; verified: number }> {
  const occurrences = (
    (await ctx.store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[]
  ).map(renderOccurrence);
  const runs = ((await ctx.store.read((r) => r.list<RunRecord['data']>(KINDS.run))) as RunRecord[]).map(renderRun);
  const attempts = ((await ctx.store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt))) as AttemptRecord[]).map(
    renderAttempt,
  );
  const receipts = (await ctx.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt))).map((r) => r.data);
  const verified = receipts.filter((r) => verifyIntegrity(r).valid).length;
  ctx.print('', paint('bold', 'Summary'));
  ctx.print(
    table(
      ['occurrence', 'scheduled', 'revision', 'state'],
      occurrences.map((o) => [
        String(o.occurrenceId),
        String(o.scheduledFor).slice(0, 16),
        String(o.automationRevision),
        paint(String(o.state), String(o.state)),
      ]),
    ),
  );
  ctx.print(
    '',
    table(
      ['run', 'attempts', 'state'],
      runs.map((r) => [String(r.runId), String(r.attemptCount), paint(String(r.state), String(r.state))]),
    ),
  );
  ctx.print(
    '',
    table(
      ['attempt', 'class', 'prior', 'state'],
      attempts.map((a) => [
        String(a.attemptId),
        String((a.retryClassification as { classification: string }).classification),
        priorDisposition(a.priorDisposition),
        paint(String(a.state), String(a.state)),
      ]),
    ),
  );
  ctx.print('', `receipts: ${receipts.length}, integrity verified: ${verified}/${receipts.length} (JCS SHA-256)`);
  return { receipts: receipts.length, verified };
}
