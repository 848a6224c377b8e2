import { expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import type { LaunchEvidence, LaunchRequest, LaunchResult, Observation, Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { StoreConflictError, type StoreTransaction } from '../../src/store/store.js';
import { launchOrphaned } from '../../src/domain/owner-lease.js';
import { KINDS } from '../../src/domain/records.js';

/** Sessions start only when the test opens the gate; a launch not yet started is honestly `never_started`. */
class GatedRuntime implements Runtime {
  readonly runtimeId = 'coven-code';
  readonly sideEffectClass = 'local_write' as const;
  readonly sideEffectBoundProven = true;
  readonly launches: LaunchRequest[] = [];
  private readonly started = new Set<string>();
  private open!: () => void;
  readonly gate = new Promise<void>((resolve) => (this.open = resolve));
  calledBack!: () => void;
  readonly called = new Promise<void>((resolve) => (this.calledBack = resolve));

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    this.launches.push(request);
    this.calledBack();
    await this.gate;
    this.started.add(request.sessionKey);
    return { outcome: 'started', sessionId: `s-${request.attemptId}-${this.launches.length}`, cursors: {} };
  }

  release(): void {
    this.open();
  }

  async launchEvidence(sessionKey: string): Promise<LaunchEvidence> {
    return this.started.has(sessionKey)
      ? { evidence: 'started', sessionId: `s-${sessionKey}`, cursors: {} }
      : { evidence: 'never_started', detail: 'no session under that key' };
  }

  async observe(): Promise<Observation> {
    return { status: 'running' };
  }

  async cancel(): Promise<void> {}
}

/**
 * A memory store on which one transaction runs beside the others (as on PostgreSQL under snapshot isolation):
 * its body runs at once on the state it reads, then, when the test says so, it loses its commit race.
 */
class RacingStore extends MemoryStore {
  loseNext = false;
  private lose!: () => void;
  readonly lost = new Promise<void>((resolve) => (this.lose = resolve));
  bodyRan!: () => void;
  readonly ran = new Promise<void>((resolve) => (this.bodyRan = resolve));

  loseRace(): void {
    this.lose();
  }

  override transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    if (!this.loseNext) return super.transact(body);
    this.loseNext = false;
    return this.read(async (r) => {
      await body(r as StoreTransaction);
      this.bodyRan();
      await this.lost;
      throw new StoreConflictError('lost the commit race', {});
    });
  }
}

test('a replayed run-now that loses its commit race does not disown the launch the first request is sending', async () => {
  const runtime = new GatedRuntime();
  const store = new RacingStore();
  const h = await harness({ runtime, store });
  const request = () =>
    h.engine.commands.handle(
      command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-twice' }),
    );
  // The client's retry (B) is read and run beside the first request (A); A commits first and starts sending.
  store.loseNext = true;
  const b = request();
  await store.ran;
  const a = request();
  await runtime.called;
  const [outbox] = await h.store.read((r) => r.list(KINDS.outbox));
  expect(h.engine.services.launchesInFlight.has(outbox!.id)).toBe(true);
  // B loses its race and is replayed from A's adoption.
  store.loseRace();
  expect((await b).outcome).toBe('replayed');
  // A is still sending: this engine answers for the launch, so no pass may take it for an orphan.
  expect(await h.store.read((r) => launchOrphaned(h.engine.services, r, outbox!.id, 'engine-a', null))).toBe(false);
  // A pass meanwhile must leave the launch to its sender.
  const pass = h.engine.tick();
  runtime.release();
  await pass;
  expect((await a).outcome).toBe('committed');
  // One fence, one run: the runtime was asked once.
  expect(runtime.launches).toHaveLength(1);
});
