import { afterEach, describe, expect, test, vi } from 'vitest';
import { harness, type HarnessOptions } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import type { LaunchRequest, LaunchResult, Observation, Runtime } from '../../src/runtime/runtime.js';
import { SessionExitCues } from '../../src/runtime/session-exit-cues.js';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { StoreConflictError, type StoreTransaction } from '../../src/store/store.js';
import { COMMIT_WAKE_MS, type TickReport } from '../../src/engine/engine.js';
import { OBSERVE_INTERVAL_MS } from '../../src/engine/next-wake.js';
import { KINDS } from '../../src/domain/records.js';
import { Worker } from '../../src/worker/worker.js';

/** Sessions that run until the test ends them; each end is cued (unless made without cues) and then observed. */
class CueingRuntime implements Runtime {
  readonly runtimeId = 'coven-code';
  readonly sideEffectClass = 'local_write' as const;
  readonly sideEffectBoundProven = true;
  readonly onSessionExit: Runtime['onSessionExit'];
  /** Session ids by launch, in launch order. */
  readonly sessions: string[] = [];
  /** Ends each session inside its own launch call, before the launch answered. */
  exitDuringLaunch = false;
  private readonly attempts = new Map<string, string>();
  private readonly exited = new Set<string>();
  private readonly cues = new SessionExitCues();
  subscribers = 0;

  constructor(cuesExits = true) {
    this.onSessionExit = cuesExits
      ? (listener) => {
          this.subscribers += 1;
          const unsubscribe = this.cues.subscribe(listener);
          return () => {
            this.subscribers -= 1;
            unsubscribe();
          };
        }
      : undefined;
  }

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    const sessionId = `cue-${request.attemptId}`;
    this.sessions.push(sessionId);
    this.attempts.set(sessionId, request.attemptId);
    if (this.exitDuringLaunch) this.end(sessionId);
    return { outcome: 'started', sessionId, cursors: {} };
  }

  end(sessionId: string): void {
    this.exited.add(sessionId);
    this.cues.cue({ sessionId, attemptId: this.attempts.get(sessionId)! });
  }

  async observe(sessionId: string): Promise<Observation> {
    return this.exited.has(sessionId)
      ? { status: 'exited', outcome: 'succeeded', exitCode: 0, cancelled: false, outputDigest: 'a'.repeat(64) }
      : { status: 'running' };
  }

  async cancel(): Promise<void> {}
}

/** A memory store whose next transaction that puts a record of `armedFor` fails as if another writer won. */
class RacedStore extends MemoryStore {
  armedFor: string | undefined;

  override transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return super.transact(async (tx) => {
      let raced = false;
      const watched = new Proxy(tx, {
        get: (target, property) => {
          const value = Reflect.get(target, property) as unknown;
          if (property === 'put')
            return (kind: string, ...rest: unknown[]) => {
              if (kind === this.armedFor) raced = true;
              return (target.put as (...args: unknown[]) => unknown)(kind, ...rest);
            };
          return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
        },
      });
      const result = await body(watched);
      if (raced) {
        this.armedFor = undefined;
        throw StoreConflictError.forVersion(KINDS.receipt, 'raced', null, 1);
      }
      return result;
    });
  }
}

/**
 * Turns the event loop (immediates run; the faked timers do not) until `done` holds, for at most `limitMs` of
 * real time: a settle driven by a cue needs no timer, so it must land without the test advancing any.
 */
async function turnsUntil(done: () => Promise<boolean>, limitMs = 2_000): Promise<number> {
  const began = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - began) / 1e6;
  while (!(await done())) {
    if (elapsed() > limitMs) throw new Error(`not settled within ${limitMs} ms of real time`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return elapsed();
}

async function runningEngine<R extends Runtime>(options: HarnessOptions<R>) {
  const h = await harness(options);
  const passes: TickReport[] = [];
  h.engine.start((report) => passes.push(report));
  await vi.advanceTimersByTimeAsync(0);
  expect(passes).toHaveLength(1);
  const occurrenceState = async () => (await h.read.occurrences()).map((o) => o.state).join(',');
  const runNow = () => h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
  return { ...h, passes, occurrenceState, runNow };
}

describe('session-exit cues (a running engine settles on the runtime evidence as it arrives)', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });
  const fakeTimers = () =>
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });

  test('a cued exit settles the run, with its receipt, without a pass', async () => {
    fakeTimers();
    const runtime = new CueingRuntime();
    const h = await runningEngine({ runtime });
    await h.runNow();
    expect(await h.occurrenceState()).toBe('running');
    runtime.end(runtime.sessions[0]!);
    const ms = await turnsUntil(async () => (await h.occurrenceState()) === 'succeeded');
    expect(ms).toBeLessThan(2_000);
    expect(h.passes).toHaveLength(1);
    // The settle was a routine commit (the occurrence settled for good): no pass is woken for it within 100 ms.
    await vi.advanceTimersByTimeAsync(COMMIT_WAKE_MS);
    expect(h.passes).toHaveLength(1);
    expect((await h.read.runs()).map((r) => r.state)).toEqual(['succeeded']);
    expect((await h.read.attempts()).map((a) => a.state)).toEqual(['succeeded']);
    expect(await h.read.receipts()).toHaveLength(1);
    // The next pass reports the settle the cue drove; the one after it, nothing more.
    expect((await h.engine.tick()).settled).toBe(1);
    expect((await h.engine.tick()).settled).toBe(0);
    await h.engine.stop();
    expect(runtime.subscribers).toBe(0);
  });

  test('an exit cued inside the launch call settles with the launch answer, in its commit', async () => {
    fakeTimers();
    const runtime = new CueingRuntime();
    runtime.exitDuringLaunch = true;
    const h = await runningEngine({ runtime });
    const observed = vi.spyOn(Worker.prototype, 'observe');
    const commits: string[][] = [];
    h.engine.services.observer = (transitions) => commits.push(transitions.map((t) => `${t.entity} ${t.to}`));
    await h.runNow();
    await turnsUntil(async () => (await h.occurrenceState()) === 'succeeded');
    expect(h.passes).toHaveLength(1);
    // The answer and the exit are one durable write: the attempt starts and settles in the same commit.
    expect(commits.find((c) => c.includes('attempt started'))).toEqual(
      expect.arrayContaining(['attempt started', 'occurrence running', 'attempt succeeded', 'occurrence succeeded']),
    );
    const feed = await h.read.feed();
    const attemptMoves = feed.filter((e) => e.kind === 'attempt.transitioned').map((e) => e.payload.to);
    expect(attemptMoves.slice(-2)).toEqual(['started', 'succeeded']);
    await h.engine.stop();
    // The cue was spent by that commit: the worker was never sent to observe the attempt again.
    expect(observed).toHaveBeenCalledTimes(0);
  });

  test('when the settle fails inside the launch answer, the answer commits alone and the exit settles after it', async () => {
    fakeTimers();
    const runtime = new CueingRuntime();
    runtime.exitDuringLaunch = true;
    const store = new RacedStore();
    const h = await runningEngine({ runtime, store });
    store.armedFor = KINDS.receipt;
    await h.runNow();
    expect(store.armedFor).toBeUndefined();
    await turnsUntil(async () => (await h.occurrenceState()) === 'succeeded');
    expect(h.passes).toHaveLength(1);
    expect(await h.read.receipts()).toHaveLength(1);
    expect((await h.engine.tick()).errors).toEqual([]);
    await h.engine.stop();
  });

  test('a runtime without cues is settled by the next pass, as before', async () => {
    fakeTimers();
    const runtime = new CueingRuntime(false);
    const h = await runningEngine({ runtime });
    await h.runNow();
    runtime.end(runtime.sessions[0]!);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(await h.occurrenceState()).toBe('running');
    // The manual run's commits were routine (its launch sent by the engine, the session running): the pass that
    // observes running sessions comes within the observation interval.
    await vi.advanceTimersByTimeAsync(OBSERVE_INTERVAL_MS);
    expect(h.passes.length).toBeGreaterThan(1);
    expect(await h.occurrenceState()).toBe('succeeded');
    await h.engine.stop();
  });

  test('a pass observing the same exit at the same moment: one settle, one receipt, no error', async () => {
    fakeTimers();
    const runtime = new CueingRuntime();
    const h = await runningEngine({ runtime });
    await h.runNow();
    runtime.end(runtime.sessions[0]!);
    const report = await h.engine.tick();
    await turnsUntil(async () => (await h.occurrenceState()) === 'succeeded');
    expect(report.errors).toEqual([]);
    const settles = (await h.read.feed()).filter(
      (e) => e.kind === 'attempt.transitioned' && e.payload.to === 'succeeded',
    );
    expect(settles).toHaveLength(1);
    expect(await h.read.receipts()).toHaveLength(1);
    await h.engine.stop();
  });

  test('a cued settle that loses its commit to another writer is contended in the next pass, not an error', async () => {
    fakeTimers();
    const runtime = new CueingRuntime();
    const store = new RacedStore();
    const h = await runningEngine({ runtime, store });
    await h.runNow();
    store.armedFor = KINDS.receipt;
    runtime.end(runtime.sessions[0]!);
    await turnsUntil(async () => store.armedFor === undefined);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(await h.occurrenceState()).toBe('running');
    const report = await h.engine.tick();
    expect(report.errors).toEqual([]);
    expect(report.contended).toBe(1);
    // The pass observes every session, so the exit the lost settle was about still settles the run.
    expect(report.settled).toBe(1);
    expect(await h.occurrenceState()).toBe('succeeded');
    await h.engine.stop();
  });

  test("a FunctionRuntime cues its function's return", async () => {
    fakeTimers();
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const runtime = new FunctionRuntime('coven-code', async () => {
      await gate;
      return { outcome: 'succeeded', output: 'done' };
    });
    const h = await runningEngine({ runtime });
    await h.runNow();
    expect(await h.occurrenceState()).toBe('running');
    finish();
    await turnsUntil(async () => (await h.occurrenceState()) === 'succeeded');
    expect(h.passes).toHaveLength(1);
    await h.engine.stop();
  });

  test('an engine driven by tick() alone hears no cues: its passes stay the only steps', async () => {
    const runtime = new CueingRuntime();
    const h = await harness({ runtime });
    await h.ok(command('occurrence.runNow.v1', { automationId: 'daily' }));
    expect(runtime.subscribers).toBe(0);
    runtime.end(runtime.sessions[0]!);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect((await h.read.occurrences()).map((o) => o.state)).toEqual(['running']);
    expect((await h.engine.tick()).settled).toBe(1);
  });
});
