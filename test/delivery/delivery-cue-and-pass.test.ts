import { expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { deliveryOf } from '../../src/domain/delivery.js';
import { KINDS, type AttemptRecord } from '../../src/domain/records.js';
import type { OutputDelivery } from '../../src/runtime/output-delivery.js';
import type { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { settleDelivering } from '../../src/worker/delivery.js';

/** A delivery port whose commit waits until the test lets it finish: a writer caught mid-write. */
class GatedDelivery implements OutputDelivery {
  calls = 0;
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  started!: () => void;
  readonly writing = new Promise<void>((resolve) => (this.started = resolve));

  async commit(): Promise<{ digest: string }> {
    this.calls += 1;
    this.started();
    await this.gate;
    return { digest: 'f'.repeat(64) };
  }

  finish(): void {
    this.open();
  }
}

// worker/delivery.ts: "One delivery per attempt in this process: a cue and a pass may observe the same exit at
// once." Both observations get past the in-flight check before either marks the attempt, so the second finds
// the first's pending delivery, takes it for one nobody writes, and fails a run whose output is being delivered.
test('a cue and a pass observing the same successful exit at once deliver once and the run succeeds', async () => {
  const delivery = new GatedDelivery();
  const h = await harness({ delivery, outputTarget: 'reports/daily.md' });
  h.clock.set('2026-03-02T09:00:00.000Z');
  await h.engine.tick();
  h.clock.set('2026-03-02T09:02:00.000Z');
  const [record] = (await h.store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt))) as AttemptRecord[];
  const attemptId = record!.id;
  const sessionId = record!.data.attributes.workerCorrelation!.sessionId!;
  const observation = await (h.runtime as SimulatedRuntime).observe(sessionId, h.clock.now());
  expect(observation.status).toBe('exited');
  if (observation.status === 'running') return;
  const cue = settleDelivering(h.engine.services, attemptId, sessionId, observation);
  const pass = settleDelivering(h.engine.services, attemptId, sessionId, observation);
  await delivery.writing;
  delivery.finish();
  await Promise.all([cue, pass]);
  expect(delivery.calls).toBe(1);
  const delivered = await h.store.read(async (r) => deliveryOf(r, attemptId));
  expect(delivered?.state).toBe('committed');
  expect((await h.read.runs()).map((r) => r.state)).toEqual(['succeeded']);
  expect(await h.store.read((r) => r.list(KINDS.delivery))).toHaveLength(1);
});
