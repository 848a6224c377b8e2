import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { eventually } from '../support/eventually.js';
import { createEngine } from '../../src/engine/engine.js';
import { sha256Hex, verifyIntegrity } from '../../src/contract/digest.js';
import { deliveryOf } from '../../src/domain/delivery.js';
import { KINDS } from '../../src/domain/records.js';
import { runDoctor } from '../../src/observability/run-doctor.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { AtomicFileDelivery, type OutputDelivery } from '../../src/runtime/output-delivery.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openStore } from '../../src/store/open-store.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-delivery-settlement-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function root(): string {
  const path = join(dir, `root-${++n}`);
  mkdirSync(path);
  return path;
}

/** A delivery port whose commits wait until the test answers them: a writer caught between pending and done. */
class GatedDelivery implements OutputDelivery {
  calls = 0;
  private release: ((error?: Error) => void) | undefined;

  async commit(): Promise<{ digest: string }> {
    this.calls += 1;
    await new Promise<void>((resolve, reject) => {
      this.release = (error) => (error === undefined ? resolve() : reject(error));
    });
    return { digest: 'f'.repeat(64) };
  }

  get waiting(): boolean {
    return this.release !== undefined;
  }

  fail(error: Error): void {
    this.release?.(error);
  }
}

/** Lets the event loop turn until `done`, bounded in real time so a hang fails the test. */
async function turnsUntil(done: () => Promise<boolean>, limitMs = 5_000): Promise<void> {
  const began = process.hrtime.bigint();
  while (!(await done())) {
    if (Number(process.hrtime.bigint() - began) / 1e6 > limitMs) throw new Error(`not done within ${limitMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const deliveries = (h: Awaited<ReturnType<typeof harness>>) =>
  h.store.read(async (r) => Promise.all((await r.list(KINDS.delivery)).map((d) => deliveryOf(r, d.id))));

describe('delivering runs', () => {
  test.each(['memory', 'json'] as const)(
    'a succeeded session is delivered atomically, then the run succeeds and its receipt records the digest (%s store)',
    async (kind) => {
      const at = root();
      const store = kind === 'memory' ? new MemoryStore() : await openStore(join(at, '..', `store-${n}.json`));
      const h = await harness({ store, delivery: new AtomicFileDelivery(at), outputTarget: 'reports/daily.md' });
      h.clock.set('2026-03-02T09:00:00.000Z');
      await h.engine.tick();
      h.clock.set('2026-03-02T09:02:00.000Z');
      await h.engine.tick();
      const [run] = await h.read.runs();
      expect(run!.state).toBe('succeeded');
      const content = readFileSync(join(at, 'reports/daily.md'), 'utf8');
      expect(readdirSync(join(at, 'reports'))).toEqual(['daily.md']);
      const [receipt] = await h.read.receipts();
      expect(receipt!.deliveryDigest).toMatchObject({ algorithm: 'sha256', value: sha256Hex(content) });
      // What was delivered is the session's output: the digest the runtime reported for it.
      expect(receipt!.resultDigest).toMatchObject({ value: sha256Hex(content) });
      expect(verifyIntegrity(receipt!).valid).toBe(true);
      expect((await deliveries(h)).map((d) => d?.state)).toEqual(['committed']);
      const doctor = await runDoctor(h.engine);
      expect(doctor.findings.map((f) => f.code)).not.toContain('delivery.commit-failures');
      await store.close();
    },
  );

  test('a commit failure fails the attempt: never success, the receipt says why and verifies, the doctor names it', async () => {
    const at = root();
    writeFileSync(join(at, 'out.md'), 'yesterday\n');
    const failing = new AtomicFileDelivery(at, {
      beforeRename: async () => {
        throw new Error('rename refused');
      },
    });
    const h = await harness({ delivery: failing, outputTarget: 'out.md', perRunMinutes: 10 });
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    h.clock.set('2026-03-02T09:02:00.000Z');
    await h.engine.tick();
    const [attempt] = await h.read.attempts();
    expect(attempt!.state).toBe('failed');
    const [occurrence] = await h.read.occurrences();
    expect(String(occurrence!.stateReason)).toContain('delivery commit failed: rename refused');
    const [receipt] = await h.read.receipts();
    expect(receipt!.outcome).toMatchObject({
      disposition: 'failed',
      partialFailures: [{ step: 'delivery', recovered: false }],
    });
    expect(receipt!.deliveryDigest).toBeUndefined();
    expect(verifyIntegrity(receipt!).valid).toBe(true);
    expect(readFileSync(join(at, 'out.md'), 'utf8')).toBe('yesterday\n');
    expect(readdirSync(at)).toEqual(['out.md']);
    const doctor = await runDoctor(h.engine);
    expect(doctor.findings.find((f) => f.code === 'delivery.commit-failures')?.subjectIds).toEqual([
      String((await h.read.runs())[0]!.runId),
    ]);
    // The ordinary run is held for an operator retry until its deadline, then settles failed, never succeeded.
    expect((await h.read.runs())[0]!.state).toBe('running');
    h.clock.set('2026-03-02T09:11:00.000Z');
    await h.engine.tick();
    expect((await h.read.runs())[0]!.state).toBe('failed');
  });

  test('a restart finds the delivery pending: it is ambiguous, the target is never rewritten, the run fails', async () => {
    const at = root();
    writeFileSync(join(at, 'out.md'), 'yesterday\n');
    const gate = new GatedDelivery();
    const h = await harness({ delivery: gate, outputTarget: 'out.md' });
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    h.clock.set('2026-03-02T09:02:00.000Z');
    // The first engine stops between the pending commit and the write's answer, as a crash would leave it.
    const stuck = h.engine.tick();
    await eventually(async () => (gate.waiting ? true : undefined));
    expect((await deliveries(h)).map((d) => d?.state)).toEqual(['pending']);
    const restarted = createEngine({
      store: h.store,
      clock: h.clock,
      runtimes: [new SimulatedRuntime({ durationMs: 60_000 })],
      instanceId: 'engine-a',
      delivery: new AtomicFileDelivery(at),
    });
    await restarted.tick();
    const [delivery] = await deliveries(h);
    expect(delivery).toMatchObject({ state: 'ambiguous' });
    expect(delivery!.reason).toContain('delivery commit failed: interrupted while pending');
    expect((await h.read.attempts())[0]!.state).toBe('failed');
    expect((await h.read.runs())[0]!.state).not.toBe('succeeded');
    expect(readFileSync(join(at, 'out.md'), 'utf8')).toBe('yesterday\n');
    const [receipt] = await h.read.receipts();
    expect(verifyIntegrity(receipt!).valid).toBe(true);
    // The old writer's answer arrives late: the delivery stays as the restart decided.
    gate.fail(new Error('the old process is gone'));
    await stuck;
    expect((await deliveries(h)).map((d) => d?.state)).toEqual(['ambiguous']);
    expect(gate.calls).toBe(1);
    await restarted.stop();
  });

  test('a pending delivery whose attempt settled another way, its writer gone, turns ambiguous: never left pending', async () => {
    const gate = new GatedDelivery();
    const h = await harness({ delivery: gate, outputTarget: 'out.md', perRunMinutes: 5 });
    h.clock.set('2026-03-02T09:00:00.000Z');
    await h.engine.tick();
    h.clock.set('2026-03-02T09:02:00.000Z');
    const stuck = h.engine.tick();
    await eventually(async () => (gate.waiting ? true : undefined));
    // Another engine times the attempt out after the writer's owner lease lapsed (it renews on passes only here).
    const other = createEngine({
      store: h.store,
      clock: h.clock,
      runtimes: [new SimulatedRuntime({ durationMs: 60_000 })],
      instanceId: 'engine-b',
      delivery: new AtomicFileDelivery(root()),
    });
    h.clock.set('2026-03-02T09:06:00.000Z');
    await other.tick();
    expect((await h.read.attempts())[0]!.state).toBe('timed_out');
    const [orphan] = await deliveries(h);
    expect(orphan).toMatchObject({ state: 'ambiguous' });
    expect(orphan!.reason).toContain('interrupted while pending (its attempt settled before the delivery did)');
    // The old writer's late answer changes nothing.
    gate.fail(new Error('rename refused'));
    await stuck;
    expect((await deliveries(h)).map((d) => d?.state)).toEqual(['ambiguous']);
    expect((await h.read.attempts())[0]!.state).toBe('timed_out');
    await other.stop();
  });

  test('the session-exit cue path delivers before it settles, whether the exit beats the launch answer or not', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
    try {
      for (const gated of [true, false]) {
        const at = root();
        let finish!: () => void;
        const gate = new Promise<void>((resolve) => (finish = resolve));
        const runtime = new FunctionRuntime('coven-code', async () => {
          if (gated) await gate;
          return { outcome: 'succeeded', output: `cued ${String(gated)}\n` };
        });
        const h = await harness({ runtime, delivery: new AtomicFileDelivery(at), outputTarget: 'cue.md' });
        h.engine.start();
        await vi.advanceTimersByTimeAsync(0);
        await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
        finish();
        await turnsUntil(async () => (await h.read.runs())[0]?.state === 'succeeded');
        await h.engine.stop();
        expect(readFileSync(join(at, 'cue.md'), 'utf8')).toBe(`cued ${String(gated)}\n`);
        const [receipt] = await h.read.receipts();
        expect(receipt!.deliveryDigest).toMatchObject({ value: sha256Hex(`cued ${String(gated)}\n`) });
      }
    } finally {
      vi.useRealTimers();
    }
  });
});
