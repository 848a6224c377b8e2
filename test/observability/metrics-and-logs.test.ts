import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { observabilityRoutes } from '../../src/daemon/observability-routes.js';
import { createEngineMetrics } from '../../src/observability/metrics.js';
import { createEngineLogger } from '../../src/observability/logger.js';
import type { DoctorReport } from '../../src/observability/doctor.js';
import { command } from '../support/commands.js';
import { doctorWorld } from './doctor-world.js';
import { parseSamples } from './prometheus-text.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

describe('metrics', () => {
  test('after a few passes the text parses and carries the SLO series with the values the passes imply', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    const metrics = createEngineMetrics({ engine: w.engine, processMetrics: true });
    const pass = async (time: string) => {
      w.clock.set(at(time));
      metrics.observePass(await w.engine.tick());
    };
    w.runtime.enqueue('succeed', 'hang');
    await pass('09:00:05');
    await pass('09:02:05');
    await w.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
    await pass('09:02:10');
    const s = parseSamples(await metrics.text());
    expect(s.get('coven_scheduler_pass_duration_seconds_count')).toBe(3);
    expect(s.get('coven_scheduler_passes_total{outcome="ok"}')).toBe(3);
    expect(s.get('coven_scheduler_pass_phase_duration_seconds_count{phase="plan"}')).toBe(3);
    // The 09:00 slot was planned, claimed, dispatched and started 5 s after it came due (engine clock), the manual
    // run at once: two observations per step, summing to 5 s.
    for (const step of ['plan', 'claim', 'dispatch', 'start']) {
      expect(s.get(`coven_occurrence_${step}_latency_seconds_count`)).toBe(2);
      expect(s.get(`coven_occurrence_${step}_latency_seconds_sum`)).toBeCloseTo(5, 6);
      expect(s.get(`coven_occurrence_${step}_latency_seconds_bucket{le="5"}`)).toBe(2);
    }
    expect(s.get('coven_occurrences{state="succeeded"}')).toBe(1);
    expect(s.get('coven_occurrences{state="running"}')).toBe(1);
    expect(s.get('coven_occurrences{state="failed"}')).toBe(0);
    expect(s.get('coven_runs{state="running"}')).toBe(1);
    expect(s.get('coven_active_runs')).toBe(1);
    expect(s.get('coven_queue_depth_occurrences')).toBe(0);
    expect(s.get('coven_oldest_eligible_age_seconds')).toBe(0);
    // run-now launches inside its command, not in a pass: only the slot's launch is a pass's.
    expect(s.get('coven_launches_total{outcome="started"}')).toBe(1);
    expect(s.get('coven_store_transactions_total{outcome="committed"}')).toBeGreaterThan(3);
    expect(s.get('coven_store_commit_wait_seconds_count')).toBeGreaterThan(3);
    expect(s.get('coven_store_commits_total')).toBeGreaterThan(3);
    expect(s.get('coven_scheduler_last_pass_timestamp_seconds')).toBe(Date.parse(at('09:02:10')) / 1000);
    expect(s.has('process_cpu_user_seconds_total')).toBe(true);
    expect(s.has('nodejs_heap_size_used_bytes')).toBe(true);
    metrics.dispose();
  });

  test('queue depth and oldest eligible age: due work a pass has not claimed', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    const metrics = createEngineMetrics({ engine: w.engine, processMetrics: false });
    await w.crashAt(at('09:00:05'), 'claim');
    w.clock.set(at('09:03:00'));
    const s = parseSamples(await metrics.text());
    expect(s.get('coven_queue_depth_occurrences')).toBe(1);
    expect(s.get('coven_oldest_eligible_age_seconds')).toBe(180);
    expect(s.get('coven_occurrence_plan_latency_seconds_sum')).toBeCloseTo(5, 6);
    expect(s.get('coven_occurrence_claim_latency_seconds_count')).toBe(0);
    metrics.dispose();
  });
});

describe('logs', () => {
  const lines = () => {
    const written: string[] = [];
    return { written, destination: { write: (chunk: string) => written.push(...chunk.split('\n').filter(Boolean)) } };
  };

  test('the JSON logger writes one JSON object per line with level, time and msg', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    const out = lines();
    const logger = createEngineLogger({ format: 'json', destination: out.destination });
    logger.onPass(await w.engine.tick());
    w.clock.set(at('09:00:05'));
    logger.onPass(await w.engine.tick());
    logger.info('daemon listening', { socketPath: '/tmp/x.sock' });
    logger.error('store lost', { code: 'INTERNAL' });
    expect(out.written).toHaveLength(3);
    const records = out.written.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const r of records) expect(Object.keys(r)).toEqual(expect.arrayContaining(['level', 'time', 'msg']));
    expect(records[0]).toMatchObject({ level: 30, msg: 'planned 1, launched 1, settled 0', pass: true, planned: 1 });
    // Log lines are a published view: an absolute path never appears in one (privacy redaction).
    expect(records[1]).toMatchObject({ level: 30, msg: 'daemon listening', socketPath: '[redacted:path]' });
    expect(records[2]).toMatchObject({ level: 50, msg: 'store lost' });
  });

  test('human lines by default keep the form start has always printed', async () => {
    const w = await doctorWorld({ start: at('08:59:00') });
    const out = lines();
    const logger = createEngineLogger({ destination: out.destination });
    // An idle pass logs at debug: not written at the default level.
    logger.onPass(await w.engine.tick());
    w.clock.set(at('09:00:05'));
    logger.onPass(await w.engine.tick());
    logger.warn('slow commit', { ms: 12 });
    expect(out.written[0]).toBe(`${at('09:00:05')} planned 1, launched 1, settled 0`);
    expect(out.written).toHaveLength(2);
    expect(out.written[1]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z WARN slow commit ms=12$/);
  });
});

describe('the observability routes on a running daemon', () => {
  let dir: string | undefined;
  let daemon: Daemon | undefined;
  afterEach(async () => {
    await daemon?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  test('GET /metrics and GET /api/v1/doctor answer over loopback TCP without the token', async () => {
    dir = mkdtempSync(join(tmpdir(), 'coven-observe-'));
    const store = await JsonFileStore.open(join(dir, 'automations.json'));
    const engine = createEngine({ store, runtimes: [new SimulatedRuntime({ durationMs: 0 })] });
    const metrics = createEngineMetrics({ engine });
    metrics.observePass(await engine.tick());
    daemon = await startDaemon({
      engine,
      store,
      storeFile: store.file,
      listen: { host: '127.0.0.1', port: 0 },
      plugins: [observabilityRoutes({ metrics })],
    });
    const scraped = await fetch(`${daemon.url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parseSamples(await scraped.text());
    expect(samples.get('coven_scheduler_passes_total{outcome="ok"}')).toBe(1);
    const answered = await fetch(`${daemon.url}/api/v1/doctor`);
    expect(answered.status).toBe(200);
    const report = (await answered.json()) as DoctorReport;
    expect(report).toMatchObject({ doctorVersion: 1, ok: true, findings: [], leadership: { isLeader: true } });
    await daemon.close();
    daemon = undefined;
    metrics.dispose();
    await store.close();
  });
});
