import { describe, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine } from '../../src/engine/engine.js';
import { nextWakeAt } from '../../src/engine/next-wake.js';
import { runDoctor } from '../../src/observability/run-doctor.js';
import { createEngineMetrics } from '../../src/observability/metrics.js';
import { LIMITS_EXTENSION, type FlowLimits, type LimitsExtension } from '../../src/domain/flow-limits.js';
import type { FlowReport } from '../../src/domain/flow-report.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord } from '../../src/domain/records.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { command, definitionBody } from '../support/commands.js';

interface Automation {
  id: string;
  limits?: LimitsExtension;
  runtimeId?: string;
}

/** One engine with the automations given, all daily at 09:00 utc, each session running `runMinutes`. */
async function world(automations: Automation[], limits: FlowLimits | undefined, runMinutes = 10) {
  const clock = new SimulatedClock('2026-12-07T08:59:00.000Z');
  const store = new MemoryStore();
  const runtimeIds = [...new Set(automations.map((a) => a.runtimeId ?? 'coven-code'))];
  const runtimes = runtimeIds.map((runtimeId) => new SimulatedRuntime({ runtimeId, durationMs: runMinutes * 60_000 }));
  const engine = createEngine({ store, clock, runtimes, instanceId: 'engine-a', retention: false });
  const ok = async (name: string, payload: Record<string, unknown>, expectedRevision?: number) => {
    const response = await engine.commands.handle(command(name, payload, { expectedRevision }));
    expect(response.outcome, JSON.stringify(response.error)).not.toBe('rejected');
    return response;
  };
  for (const a of automations) {
    const extra = {
      policies: {
        timeout: { perRunMinutes: 60 },
        retry: { maxAttempts: 1, backoffPolicy: 'fixed', backoffSeconds: 30, retryableClasses: [] },
        concurrency: { overlap: 'forbid' },
        misfire: { disposition: 'latest' },
        retention: { occurrenceHistory: { classification: 'standard' } },
      },
      ...(a.limits === undefined ? {} : { extensions: { [LIMITS_EXTENSION]: a.limits } }),
    };
    const body = (revision: number, lifecycleState: 'draft' | 'paused') =>
      definitionBody(a.id, { revision, lifecycleState, rrule: 'FREQ=DAILY;BYHOUR=9', runtimeId: a.runtimeId, extra });
    await ok('definition.create.v1', { definition: body(1, 'draft') });
    await ok('definition.revise.v1', { definition: body(2, 'paused') }, 1);
    await ok('definition.activate.v1', { automationId: a.id }, 2);
  }
  if (limits !== undefined) await ok('x-coven-automata.limits.set.v1', { limits });
  const occurrences = async () =>
    (await store.read((r) => r.list<OccurrenceRecord['data']>(KINDS.occurrence))) as OccurrenceRecord[];
  const live = async () => (await occurrences()).filter((o) => OCCURRENCE_LIVE.has(stateOf(o)));
  const report = async () =>
    (await engine.commands.handle(command('x-coven-automata.limits.get.v1', {}))).result as unknown as FlowReport;
  return { clock, store, engine, ok, occurrences, live, report };
}
type World = Awaited<ReturnType<typeof world>>;

/**
 * Passes a minute apart until `until`, checking after each that `check` holds; answers the automations claimed,
 * pass by pass (each pass's claims sorted).
 */
async function runUntil(w: World, until: string, check: (live: OccurrenceRecord[]) => void): Promise<string[][]> {
  const claimed = new Set<string>();
  const waves: string[][] = [];
  while (w.clock.now().getTime() < Date.parse(until)) {
    w.clock.advance({ minutes: 1 });
    await w.engine.tick();
    const live = await w.live();
    check(live);
    const wave = automationsOf(live).filter((id) => !claimed.has(id));
    for (const id of wave) claimed.add(id);
    if (wave.length > 0) waves.push(wave);
  }
  return waves;
}

const automationsOf = (live: OccurrenceRecord[]) => live.map((o) => o.data.attributes.automationId).sort();

describe('x-coven-automata.limits.v1', () => {
  test('a runtime cap holds sessions in flight to the cap; the rest wait eligible and run by priority', async () => {
    const priorities = { a: 0, b: 5, c: 1, d: 3, e: 2 };
    const w = await world(
      Object.entries(priorities).map(([id, priority]) => ({ id, limits: { priority } })),
      { runtimes: { 'coven-code': { inFlight: 2 } } },
    );
    let most = 0;
    const order = await runUntil(w, '2026-12-07T09:40:00.000Z', (live) => {
      most = Math.max(most, live.length);
      expect(live.length).toBeLessThanOrEqual(2);
    });
    expect(most).toBe(2);
    expect(order).toEqual([['b', 'd'], ['c', 'e'], ['a']]);
    const states = (await w.occurrences()).map((o) => stateOf(o));
    expect(states).toEqual(Array(5).fill(OccurrenceState.succeeded));
  });

  test('a tag cap counts only the tagged automations, and an untagged one runs beside them', async () => {
    const w = await world(
      [
        { id: 'r1', limits: { tags: ['reports'] } },
        { id: 'r2', limits: { tags: ['reports'] } },
        { id: 'r3', limits: { tags: ['reports', 'billing'] } },
        { id: 'free' },
      ],
      { tags: { reports: { inFlight: 1 } } },
    );
    w.clock.advance({ minutes: 1 });
    await w.engine.tick();
    expect(automationsOf(await w.live())).toEqual(['free', 'r1']);
    const report = await w.report();
    expect(report.gates).toEqual([
      { key: 'tag:reports', inFlight: { count: 1, cap: 1 }, waiting: expect.any(Array), closed: true },
    ]);
    expect(report.gates[0]!.waiting.sort()).toEqual(
      (await w.occurrences())
        .filter((o) => stateOf(o) === 'eligible')
        .map((o) => o.id)
        .sort(),
    );
    await runUntil(w, '2026-12-07T09:40:00.000Z', (live) => {
      expect(live.filter((o) => o.data.attributes.automationId.startsWith('r')).length).toBeLessThanOrEqual(1);
    });
    expect((await w.occurrences()).map((o) => stateOf(o))).toEqual(Array(4).fill(OccurrenceState.succeeded));
  });

  test('a tag rate limit lets `limit` claims through a window, and the rest when it reopens', async () => {
    const w = await world(
      ['t1', 't2', 't3'].map((id) => ({ id, limits: { tags: ['mail'] } })),
      { tags: { mail: { rate: { limit: 2, perMinutes: 30 } } } },
      1,
    );
    w.clock.advance({ minutes: 1 });
    await w.engine.tick();
    expect((await w.live()).length).toBe(2);
    const gate = (await w.report()).gates[0]!;
    expect(gate.rate).toEqual({ limit: 2, perMinutes: 30, used: 2, reopensAt: '2026-12-07T09:30:00.000Z' });
    // The waiting occurrence does not wake the loop before the window reopens.
    const wake = await w.store.read((r) => nextWakeAt(w.engine.services, r));
    expect(wake.toISOString() > '2026-12-07T09:00:00.000Z').toBe(true);
    let thirdAt = '';
    await runUntil(w, '2026-12-07T09:35:00.000Z', (live) => {
      if (thirdAt === '' && live.length === 1 && live[0]!.data.attributes.automationId === 't3')
        thirdAt = w.clock.now().toISOString();
    });
    expect(thirdAt).toBe('2026-12-07T09:30:00.000Z');
  });

  test('doctor and metrics: work waiting at a full cap is not a backlog, and the gate series say why', async () => {
    const w = await world([{ id: 'one' }, { id: 'two' }, { id: 'three' }], {
      runtimes: { 'coven-code': { inFlight: 1 } },
    });
    await runUntil(w, '2026-12-07T09:06:00.000Z', () => undefined);
    const report = await runDoctor(w.engine, { leader: await w.engine.leadership() });
    expect(report.findings.map((f) => f.code)).not.toContain('occurrences.due-backlog');
    expect(report.counts.eligible).toBe(2);
    expect(report.surface.limits).toBe('coven-automata limits show');
    const metrics = createEngineMetrics({ engine: w.engine, processMetrics: false });
    const text = await metrics.text();
    metrics.dispose();
    expect(text).toMatch(/coven_flow_gate_in_flight\{gate="runtime:coven-code"\} 1\n/);
    expect(text).toMatch(/coven_flow_gate_cap\{gate="runtime:coven-code"\} 1\n/);
    expect(text).toMatch(/coven_flow_gate_waiting\{gate="runtime:coven-code"\} 2\n/);
    expect(text).toMatch(/coven_flow_gate_closed\{gate="runtime:coven-code"\} 1\n/);
    // Without the cap's record of who waits, the same two would be a backlog.
    await w.store.transact(async (tx) =>
      tx.delete('flow-gate', 'runtime:coven-code', (await tx.version('flow-gate', 'runtime:coven-code'))!),
    );
    const unexplained = await runDoctor(w.engine, { leader: await w.engine.leadership() });
    expect(unexplained.findings.map((f) => f.code)).toContain('occurrences.due-backlog');
  });

  test('work held at a cap wakes no pass until a commit is heard after it was held', async () => {
    const w = await world([{ id: 'one' }, { id: 'two' }], { runtimes: { 'coven-code': { inFlight: 1 } } }, 90);
    w.clock.advance({ minutes: 1 });
    await w.engine.tick();
    const wake = () => w.store.read((r) => nextWakeAt(w.engine.services, r));
    // The pass that held it went on to commit (the launch): those commits may have freed it, so it is looked at.
    expect((await wake()).getTime()).toBe(w.clock.now().getTime());
    await w.engine.tick();
    // A pass that found it held and committed nothing after: the running session is observed every second, and
    // nothing wakes the loop at once for the held occurrence.
    expect((await wake()).getTime() - w.clock.now().getTime()).toBe(1_000);
    w.engine.services.waitingWork.heard();
    expect((await wake()).getTime()).toBe(w.clock.now().getTime());
    // Held again by the next pass an hour on: still no wake-up for it.
    w.clock.advance({ minutes: 61 });
    await w.engine.tick();
    await w.engine.tick();
    expect(await w.live()).toHaveLength(1);
    expect((await wake()).getTime() - w.clock.now().getTime()).toBe(1_000);
  });

  test('run-now under a full cap is CONCURRENCY_LIMIT (retryable), and writes nothing', async () => {
    const w = await world([{ id: 'one' }, { id: 'two' }], { runtimes: { 'coven-code': { inFlight: 1 } } });
    const first = await w.ok('occurrence.runNow.v1', { automationId: 'one' });
    expect(first.outcome).toBe('committed');
    const before = await w.store.read((r) => r.readFeed());
    const refused = await w.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'two' }));
    expect(refused.outcome).toBe('rejected');
    expect(refused.error).toMatchObject({
      code: 'CONCURRENCY_LIMIT',
      retryable: true,
      details: { gates: [{ key: 'runtime:coven-code', refusal: 'cap' }] },
    });
    expect(await w.store.read((r) => r.readFeed())).toEqual(before);
  });

  test('setting a cap counts the work already in flight', async () => {
    const w = await world([{ id: 'one' }, { id: 'two' }], undefined);
    w.clock.advance({ minutes: 1 });
    await w.engine.tick();
    expect((await w.live()).length).toBe(2);
    const set = await w.ok('x-coven-automata.limits.set.v1', {
      limits: { runtimes: { 'coven-code': { inFlight: 2 } } },
    });
    expect(set.result).toMatchObject({ revision: 1, inFlight: { 'runtime:coven-code': 2 } });
    const refused = await w.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'one' }));
    expect(refused.error?.code).toBe('OVERLAP_FORBIDDEN');
    expect((await w.report()).gates[0]).toMatchObject({ key: 'runtime:coven-code', inFlight: { count: 2, cap: 2 } });
  });

  test('limits are validated and versioned: bad shapes are VALIDATION_FAILED, a stale revision REVISION_CONFLICT', async () => {
    const w = await world([{ id: 'one' }], { tags: { reports: { inFlight: 3 } } });
    const refuse = async (payload: Record<string, unknown>) =>
      (await w.engine.commands.handle(command('x-coven-automata.limits.set.v1', payload))).error?.code;
    expect(await refuse({ limits: { tags: { reports: { inFlight: 0 } } } })).toBe('VALIDATION_FAILED');
    expect(await refuse({ limits: { tags: { Reports: { inFlight: 1 } } } })).toBe('VALIDATION_FAILED');
    expect(await refuse({ limits: { queues: {} } })).toBe('VALIDATION_FAILED');
    expect(await refuse({ limits: {}, extra: 1 })).toBe('VALIDATION_FAILED');
    expect(await refuse({ limits: {}, expectedLimitsRevision: 0 })).toBe('REVISION_CONFLICT');
    await w.ok('x-coven-automata.limits.set.v1', { limits: {}, expectedLimitsRevision: 1 });
    expect(await w.report()).toMatchObject({ revision: 2, limits: {}, gates: [] });
  });

  test('a definition with a malformed limits extension is refused whole', async () => {
    const w = await world([], undefined);
    for (const limits of [
      {},
      { tags: ['UPPER'] },
      { priority: 1.5 },
      { rate: { limit: 0, perMinutes: 5 } },
      { queue: 'x' },
    ]) {
      const body = definitionBody('bad', { extra: { extensions: { [LIMITS_EXTENSION]: limits } } });
      const response = await w.engine.commands.handle(command('definition.create.v1', { definition: body }));
      expect(response.error?.code, JSON.stringify(limits)).toBe('VALIDATION_FAILED');
    }
    expect(await w.store.read((r) => r.get('definition', 'bad'))).toBeUndefined();
  });
});
