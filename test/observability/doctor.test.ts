import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, test } from 'vitest';
import { KINDS } from '../../src/domain/records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import type { StoreReader, StoreTransaction } from '../../src/store/store.js';
import type { DoctorReport } from '../../src/observability/doctor.js';
import { FINDINGS } from '../../src/observability/doctor-steps.js';
import { applyBindings, revokeFamiliar } from '../../src/testkit/conformance/authority-ops.js';
import { command } from '../support/commands.js';
import { readUpstreamJson, upstreamAvailable, upstreamDir } from '../support/upstream.js';
import { doctorWorld, faultyStore } from './doctor-world.js';
import { dailyBinding } from '../support/authority-binding.js';

const at = (time: string, day = '02') => `2026-03-${day}T${time}.000Z`;
const SCHEMA = 'conformance/schemas/diagnostics.doctor.v1.schema.json';
const schemaPresent = upstreamAvailable && existsSync(join(upstreamDir, SCHEMA));
if (!schemaPresent) console.warn(`doctor reports are not checked against upstream's schema: ${SCHEMA} not found`);
const validate = schemaPresent
  ? new Ajv2020({ strict: true, allErrors: true }).compile(readUpstreamJson<object>(SCHEMA))
  : undefined;
/** Every report the suite produces is checked against upstream's schema when it is there. */
const reports: DoctorReport[] = [];
const keep = (report: DoctorReport) => (reports.push(report), report);
const codesOf = (report: DoctorReport) =>
  keep(report)
    .findings.map((f) => f.code)
    .sort();

/** A run that succeeds: planned and launched at 09:00:05, settled by 09:02:05. */
async function healthyWorld() {
  const w = await doctorWorld({ start: at('08:59:00') });
  await w.tick(at('09:00:05'));
  await w.tick(at('09:02:05'));
  return w;
}

describe('the doctor (diagnostics.doctor.v1)', () => {
  test('a healthy store after normal passes has no findings, and the report says what it read', async () => {
    const w = await healthyWorld();
    const report = keep(await w.doctor(w.daemonFacts()));
    expect(report.findings).toEqual([]);
    expect(report).toMatchObject({
      doctorVersion: 1,
      ok: true,
      generatedAt: at('09:02:05'),
      leadership: { isLeader: true, leaderId: 'engine-a', lastSuccessfulPassAt: at('09:02:05') },
      counts: { due: 0, eligible: 0, claimed: 0, running: 0, recoveryRequired: 0, quarantined: 0 },
      safeNextSteps: [],
    });
  });

  test('scheduler.no-leader: active automations and no live owner lease (the CLI opened the store itself)', async () => {
    const w = await doctorWorld({ start: at('08:00:00') });
    const report = keep(await w.doctor());
    expect(report.findings.map((f) => [f.code, f.severity])).toEqual([['scheduler.no-leader', 'error']]);
    expect(report.ok).toBe(false);
    expect(report.leadership).toMatchObject({ isLeader: false, leaderId: null });
  });

  test('scheduler.stale-pass: no clean pass for over two minutes', async () => {
    const w = await healthyWorld();
    w.clock.set(at('09:04:06'));
    expect(codesOf(await w.doctor(w.daemonFacts()))).toEqual(['scheduler.stale-pass']);
    w.clock.set(at('09:04:04'));
    expect(codesOf(await w.doctor(w.daemonFacts()))).toEqual([]);
  });

  test('scheduler.planning-lag: a pass ran after the slot came due and could not plan it', async () => {
    const refusePlanCursor = (tx: StoreTransaction): StoreTransaction =>
      new Proxy(tx, {
        get: (target, key) =>
          key === 'put'
            ? (kind: string, ...rest: unknown[]) =>
                kind === KINDS.planCursor
                  ? Promise.reject(new Error('disk full'))
                  : (target.put as (...a: unknown[]) => unknown)(kind, ...rest)
            : (Reflect.get(target, key) as unknown),
      });
    const w = await doctorWorld({
      start: at('08:59:00'),
      store: faultyStore(new MemoryStore(), { tx: refusePlanCursor }),
    });
    await w.tick(at('09:00:30'));
    expect(w.passes.snapshot().lastPassErrors[0]).toMatch(/planning daily: disk full/);
    expect(codesOf(await w.doctor(w.daemonFacts()))).toEqual(['scheduler.planning-lag']);
  });

  test('slots that wait by policy behind their automation are neither planning lag nor due backlog', async () => {
    // buffer-one: quarter-hour slots wait, unplanned, while a 40-minute run is live.
    const buffered = await doctorWorld({
      start: at('08:59:00'),
      schedule: { cron: '*/15 * * * *', timezone: 'utc' },
      extensions: { 'x-coven-automata.overlap.v1': { policy: 'buffer-one' } },
      runtime: new SimulatedRuntime({ durationMs: 40 * 60_000 }),
      perRunMinutes: 60,
    });
    for (const time of ['09:00:30', '09:15:30', '09:30:30']) await buffered.tick(at(time));
    expect(codesOf(await buffered.doctor(buffered.daemonFacts()))).toEqual([]);
    // Backfilled slots wait, eligible, behind the live run and behind each other.
    const backfilled = await doctorWorld({
      start: at('08:59:00'),
      runtime: new SimulatedRuntime({ durationMs: 40 * 60_000 }),
      perRunMinutes: 60,
    });
    await backfilled.tick(at('09:00:30'));
    await backfilled.ok(
      command('x-coven-automata.definition.backfill.v1', {
        automationId: 'daily',
        from: '2026-02-26T00:00:00Z',
        until: '2026-02-28T23:59:59Z',
      }),
    );
    await backfilled.tick(at('09:05:00'));
    await backfilled.tick(at('09:30:00'));
    expect((await backfilled.read.occurrences()).filter((o) => o.state === 'eligible')).toHaveLength(3);
    expect(codesOf(await backfilled.doctor(backfilled.daemonFacts()))).toEqual([]);
  });

  test('occurrences.due-backlog: planned, due for over two minutes, never claimed', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    await w.crashAt(at('09:00:05'), 'claim');
    w.clock.set(at('09:03:00'));
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => f.code)).toEqual(['occurrences.due-backlog']);
    expect(report.counts.due).toBe(1);
  });

  test('occurrences.stale-lease: a claim whose lease and owner are both gone', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    w.runtime.enqueue('hang');
    await w.tick(at('09:00:05'));
    w.clock.set(at('09:10:00'));
    const report = keep(await w.doctor({ ...w.freshFacts(), leader: { isLeader: true, leaderId: 'engine-b' } }));
    expect(report.findings.map((f) => f.code)).toEqual(['occurrences.stale-lease']);
    // Its own engine still holds it: no finding.
    expect(codesOf(await w.doctor(w.freshFacts()))).toEqual([]);
  });

  test('occurrences.recovery-required and runs.ambiguous-outcome: a session lost after its side effect', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    w.runtime.enqueue('lost-after-side-effect');
    await w.tick(at('09:00:05'));
    await w.tick(at('09:02:05'));
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.severity])).toEqual([
      ['occurrences.recovery-required', 'warning'],
      ['runs.ambiguous-outcome', 'error'],
    ]);
    expect(report.ok).toBe(false);
    expect(report.counts.recoveryRequired).toBe(1);
    expect(report.safeNextSteps.join(' ')).not.toMatch(/delete/i);
  });

  test('occurrences.missed-occurrence: missed slots collapsed into the latest one by misfire', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    await w.tick(at('09:30:00', '05'));
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => f.code)).toEqual(['occurrences.missed-occurrence']);
    expect(report.findings[0]!.subjectIds).toEqual(['daily-1772701200000']);
  });

  test('runs.repeated-failures: three consecutive failed runs', async () => {
    const w = await doctorWorld({ start: at('10:00:00'), perRunMinutes: 1 });
    w.runtime.defaultBehavior = 'fail';
    for (const minute of ['10', '20', '30']) {
      await w.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
      await w.tick(at(`10:${minute}:30`));
      await w.tick(at(`10:${minute}:50`));
      await w.tick(at(`10:${minute.replace(/0$/, '5')}:00`));
    }
    // Each held failure runs out its deadline: timed out, a failure that is not a success.
    expect((await w.read.runs()).map((r) => r.state)).toEqual(['timed_out', 'timed_out', 'timed_out']);
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.subjectIds])).toEqual([['runs.repeated-failures', ['daily']]]);
  });

  test('runs.quarantined: retries exhausted', async () => {
    const w = await doctorWorld({
      start: at('08:59:00'),
      retry: { maxAttempts: 1, backoffPolicy: 'none', retryableClasses: ['runtime_unavailable'] },
    });
    w.runtime.enqueue('unavailable');
    await w.tick(at('09:00:05'));
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.subjectIds])).toEqual([['runs.quarantined', ['daily']]]);
    expect(report.counts.quarantined).toBe(1);
  });

  test('runs.cancelled: an operator cancel, reported as info (the report stays ok)', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    w.runtime.enqueue('hang');
    await w.tick(at('09:00:05'));
    const [occurrence] = await w.read.occurrences();
    const asked = await w.engine.commands.handle(
      command('occurrence.cancel.v1', { occurrenceId: occurrence!.occurrenceId }),
    );
    // A running session's cancel is a request: it completes when the runtime acknowledges it.
    expect(asked.error?.code).toBe('CANCEL_PENDING');
    await w.tick(at('09:00:10'));
    await w.tick(at('09:00:15'));
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.severity])).toEqual([['runs.cancelled', 'info']]);
    expect(report.ok).toBe(true);
  });

  test('receipts.unverified: a receipt whose bytes changed on disk', async () => {
    const tamper = (reader: StoreReader): StoreReader =>
      new Proxy(reader, {
        get: (target, key) =>
          key === 'list'
            ? async (kind: string, options?: object) => {
                const records = await target.list<Record<string, unknown>>(kind, options);
                if (kind !== KINDS.receipt) return records;
                return records.map((r) => ({ ...r, data: { ...r.data, outcome: { disposition: 'succeeded!' } } }));
              }
            : (Reflect.get(target, key) as unknown),
      });
    const inner = new MemoryStore();
    const w = await doctorWorld({ start: at('08:59:00'), store: inner });
    await w.tick(at('09:00:05'));
    await w.tick(at('09:02:05'));
    expect(codesOf(await w.doctor(w.freshFacts()))).toEqual([]);
    const seen = await doctorWorld({ start: at('09:02:05'), store: faultyStore(inner, { reader: tamper }) });
    const report = keep(await seen.doctor(seen.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.severity])).toEqual([['receipts.unverified', 'error']]);
  });

  test('a failed run held for operator retry is a finding naming it, until when, how it failed and what ends it', async () => {
    const w = await doctorWorld({ start: at('10:00:00') });
    w.runtime.defaultBehavior = 'fail';
    await w.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
    await w.tick(at('10:00:30'));
    await w.tick(at('10:01:50'));
    const [run] = await w.read.runs();
    expect(run!.state).toBe('running');
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.severity, f.subjectIds])).toEqual([
      ['runs.repeated-failures', 'warning', [run!.runId]],
    ]);
    expect(report.findings[0]!.observed).toBe(
      `1 run failed and held for operator retry: ${String(run!.runId)} (daily) until ${String(run!.deadlineAt)}: ` +
        'runtime_error, exit 1',
    );
    expect(report.findings[0]!.safeNextSteps).toEqual([
      `read what it printed: coven-automata logs ${String(run!.runId)}`,
      `once the cause is fixed, retry it: coven-automata retry ${String(run!.runId)}`,
      `or give it up (else it times out at its deadline): coven-automata cancel ${String(run!.occurrenceId)}`,
    ]);
  });

  test('delivery.commit-failures: a run whose output could not be delivered to its atomic outputTarget', async () => {
    const delivery = {
      commit: async () => {
        throw new Error('no space left on the device');
      },
    };
    const w = await doctorWorld({ start: at('08:59:00'), delivery, outputTarget: 'notes/today.md' });
    await w.tick(at('09:00:05'));
    await w.tick(at('09:02:05'));
    const report = keep(await w.doctor(w.freshFacts()));
    const [run] = await w.read.runs();
    // The run failed and is held for an operator retry: the held finding names it too.
    expect(report.findings.map((f) => [f.code, f.severity, f.subjectIds])).toEqual([
      ['runs.repeated-failures', 'warning', [run!.runId]],
      ['delivery.commit-failures', 'error', [run!.runId]],
    ]);
    expect(report.findings[1]!.observed).toBe(
      '1 run whose output delivery did not commit; their attempts failed, so none reads as succeeded',
    );
  });

  test('events.cursor-lag: a live subscriber more than three events behind', async () => {
    const w = await healthyWorld();
    const head = (await w.read.feed()).length - 1;
    const lagging = { subscriberId: 'sse-1', position: head - 4 };
    expect(codesOf(await w.doctor({ ...w.freshFacts(), subscribers: [lagging] }))).toEqual(['events.cursor-lag']);
    const close = { subscriberId: 'sse-2', position: head - 3 };
    expect(codesOf(await w.doctor({ ...w.freshFacts(), subscribers: [close] }))).toEqual([]);
  });

  test('events.cursor-lag: a subscriber of one stream is judged by the sequence it reached on that stream', async () => {
    const w = await healthyWorld();
    const entries = await w.store.read((r) => r.readFeed({ after: -1, limit: 10_000 }));
    const counts = new Map<string, number>();
    for (const e of entries) counts.set(e.stream, (counts.get(e.stream) ?? 0) + 1);
    const [stream, length] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
    expect(length).toBeGreaterThan(4);
    // Far behind on the feed, yet it has every event of its own stream: nothing to report.
    const caughtUp = { subscriberId: 'sse-3', position: -1, stream, sequence: length - 1 };
    expect(codesOf(await w.doctor({ ...w.freshFacts(), subscribers: [caughtUp] }))).toEqual([]);
    const behind = { subscriberId: 'sse-4', position: -1, stream, sequence: length - 5 };
    const report = await w.doctor({ ...w.freshFacts(), subscribers: [behind] });
    expect(report.findings.map((f) => f.observed)).toEqual([
      `subscriber sse-4 of ${stream} at sequence ${length - 5} is 4 events behind`,
    ]);
  });

  test('disk.retention-pressure: settled history past its window by the sweep grace (15 min), still stored', async () => {
    const w = await healthyWorld();
    const [queued] = await w.store.read((r) => r.list<{ settledAt: string }>('retention-due/standard'));
    expect(queued?.data.settledAt).toBe(at('09:02:05'));
    const retention = { windowDays: { standard: 1 / 24 } };
    w.clock.set(at('10:17:04'));
    expect(codesOf(await w.doctor({ ...w.freshFacts(), retention }))).toEqual([]);
    w.clock.set(at('10:17:06'));
    expect(codesOf(await w.doctor({ ...w.freshFacts(), retention }))).toEqual(['disk.retention-pressure']);
  });

  test('disk.retention-pressure: a window shorter than the grace is overdue once history outlived it twice', async () => {
    const w = await healthyWorld();
    const retention = { windowDays: { standard: 1 / 1440 } };
    w.clock.set(at('09:04:04'));
    expect(codesOf(await w.doctor({ ...w.freshFacts(), retention }))).toEqual([]);
    w.clock.set(at('09:04:06'));
    const report = await w.doctor({ ...w.freshFacts(), retention });
    expect(codesOf(report)).toEqual(['disk.retention-pressure']);
    expect(report.safeNextSteps.join(' ')).toContain('sweepEveryMinutes');
    const seconds = { windowDays: { standard: 1 / 86_400 } };
    w.clock.set(at('09:02:08'));
    expect(codesOf(await w.doctor({ ...w.freshFacts(), retention: seconds }))).toEqual(['disk.retention-pressure']);
  });

  test('authority.*: a revoked familiar is a stale identity, and its refused dispatch holds until a run succeeds', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    const handle = { engine: w.engine, clock: w.clock };
    const binding = dailyBinding();
    for (const a of await applyBindings(handle, [binding])) expect(a.outcome).toBe('committed');
    expect(codesOf(await w.doctor(w.freshFacts()))).toEqual([]);
    await revokeFamiliar(handle, { automationId: 'daily' });
    await w.tick(at('09:00:05'));
    const [refused] = await w.read.occurrences();
    const report = keep(await w.doctor(w.freshFacts()));
    expect(report.findings.map((f) => [f.code, f.severity, f.subjectIds])).toEqual([
      ['authority.unresolved-refusal', 'error', [refused!.occurrenceId]],
      ['authority.stale-identity', 'error', ['daily']],
    ]);
    expect(report.findings[1]!.observed).toBe('daily binds charm@1; the registry holds charm@1 (revoked)');
    // Registered again (charm@2) and bound to it: the identity verifies; the refusal holds until a run succeeds.
    await applyBindings(handle, [{ ...binding, familiarRevision: 2 }]);
    expect(codesOf(await w.doctor(w.freshFacts()))).toEqual(['authority.unresolved-refusal']);
    await w.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
    await w.tick(at('09:02:05'));
    expect((await w.read.runs()).map((r) => r.state).sort()).toEqual(['failed', 'succeeded']);
    expect(codesOf(await w.doctor(w.freshFacts()))).toEqual([]);
  });

  test('every finding code of the brief was produced above, with the severity its table gives', () => {
    const produced = new Set(reports.flatMap((r) => r.findings.map((f) => f.code)));
    expect([...produced].sort()).toEqual(Object.keys(FINDINGS).sort());
    for (const f of reports.flatMap((r) => r.findings)) expect(f.severity).toBe(FINDINGS[f.code].severity);
  });

  test.skipIf(!schemaPresent)("every report validates against upstream's diagnostics.doctor.v1 schema", () => {
    expect(reports.length).toBeGreaterThan(10);
    for (const report of reports) expect(validate!(report), JSON.stringify(validate!.errors)).toBe(true);
  });
});
