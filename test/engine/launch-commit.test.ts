import { expect, test } from 'vitest';
import { harness, transitions } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import type { LaunchRequest, LaunchResult, Observation, Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { StoreTransaction } from '../../src/store/store.js';
import { KINDS } from '../../src/domain/records.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';

const stateOf = (rendered: Record<string, unknown>) => rendered.state as string;

/** Sessions that keep running; each launch call runs `onLaunch` first, so a test can look at the store then. */
class WatchedRuntime implements Runtime {
  readonly runtimeId = 'coven-code';
  readonly sideEffectClass = 'local_write' as const;
  readonly sideEffectBoundProven = true;
  readonly launches: LaunchRequest[] = [];
  onLaunch: () => Promise<void> = async () => undefined;

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    await this.onLaunch();
    this.launches.push(request);
    return { outcome: 'started', sessionId: `s-${request.attemptId}`, cursors: {} };
  }

  async observe(): Promise<Observation> {
    return { status: 'running' };
  }

  async cancel(): Promise<void> {}
}

/** A memory store whose next transaction runs its body, then fails instead of committing. */
class FailingStore extends MemoryStore {
  failNext = false;

  override transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    if (!this.failNext) return super.transact(body);
    this.failNext = false;
    return super.transact(async (tx) => {
      await body(tx);
      throw new Error('disk full');
    });
  }
}

/** A memory store whose first transaction that writes a launch (an outbox record) runs its body, then fails. */
class FailingFirstLaunchStore extends MemoryStore {
  failed = false;

  /** `failures`: how many commits that write a launch fail before they succeed. */
  constructor(private failures = 1) {
    super();
  }

  override transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return super.transact(async (tx) => {
      let launchWritten = false;
      const watching = new Proxy(tx, {
        get(target, property) {
          const value = Reflect.get(target, property) as unknown;
          if (typeof value !== 'function') return value;
          if (property !== 'put') return value.bind(target);
          return (kind: string, ...rest: unknown[]) => {
            if (kind === KINDS.outbox) launchWritten = true;
            return (value as (...args: unknown[]) => unknown).call(target, kind, ...rest);
          };
        },
      });
      const result = await body(watching);
      if (launchWritten && this.failures > 0) {
        this.failures -= 1;
        this.failed = true;
        throw new Error('disk full');
      }
      return result;
    });
  }
}

test('a run-now commits its claim, acceptance, adoption and sending launch once, before the runtime is called', async () => {
  const runtime = new WatchedRuntime();
  const h = await harness({ runtime });
  let commits = 0;
  h.store.onCommit(() => (commits += 1));
  let atLaunch: { commits: number; feed: EventEnvelope[]; outbox: string[] } | undefined;
  runtime.onLaunch = async () => {
    const outbox = await h.store.read((r) => r.list<{ snapshot: { value: string } }>(KINDS.outbox));
    atLaunch = { commits, feed: await h.read.feed(), outbox: outbox.map((o) => o.data.snapshot.value) };
  };
  const response = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-one-commit' }),
  );
  expect(response.outcome).toBe('committed');
  expect(runtime.launches).toHaveLength(1);
  // One durable commit before the side effect, and it already holds the adoption and the `sending` mark.
  expect(atLaunch!.commits).toBe(1);
  expect(atLaunch!.outbox).toEqual(['sending']);
  const moves = atLaunch!.feed
    .filter((e) => e.kind === 'run.transitioned' || e.kind === 'attempt.transitioned')
    .map((e) => `${e.kind.split('.')[0]} ${transitions([e])[0]}`);
  expect(moves).toEqual([
    'run none->accepted',
    'attempt none->adopted',
    'attempt adopted->dispatching',
    'run accepted->running',
  ]);
  // The dispatcher's transitions carry no command causation; the command's own do.
  const runAccepted = atLaunch!.feed.find((e) => e.kind === 'run.transitioned')!;
  expect(runAccepted.causation?.adoptionKey).toBeUndefined();
  expect(runAccepted.payload.commandAdoptionKey).toBeUndefined();
  const occurrenceCreated = atLaunch!.feed.find((e) => e.kind === 'occurrence.transitioned')!;
  expect(occurrenceCreated.causation?.adoptionKey).toBe('manual-one-commit');
  // The launch answer is the second commit.
  expect(commits).toBe(2);
  expect((await h.read.attempts()).map((a) => a.state)).toEqual(['started']);
});

test('a run-now whose commit fails launches nothing, leaves nothing, and the engine owns no launch', async () => {
  const runtime = new WatchedRuntime();
  const store = new FailingStore();
  const h = await harness({ runtime, store });
  store.failNext = true;
  const failed = await h.engine.commands
    .handle(command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-failed' }))
    .catch((error: unknown) => error);
  expect(failed).toBeDefined();
  expect(runtime.launches).toEqual([]);
  expect(await h.read.occurrences()).toEqual([]);
  expect(await h.store.read((r) => r.list(KINDS.outbox))).toEqual([]);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
  // The same request again commits and launches once.
  const retried = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-failed' }),
  );
  expect(retried.outcome).toBe('committed');
  expect(runtime.launches).toHaveLength(1);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
});

test('a pass leaves a run-now’s launch to the release in flight, and looks at it again once that release ended', async () => {
  const runtime = new WatchedRuntime();
  const h = await harness({ runtime });
  const dispatched: string[] = [];
  const dispatch = h.engine.dispatch.bind(h.engine);
  h.engine.dispatch = async (occurrenceId) => {
    dispatched.push(occurrenceId);
    return dispatch(occurrenceId);
  };
  let duringRelease: string[] | undefined;
  runtime.onLaunch = async () => {
    await h.engine.tick();
    duringRelease = [...dispatched];
    // The runtime fails: the launch stays `sending` (it may have happened) and its occurrence claimed.
    throw new Error('runtime unreachable');
  };
  const response = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-held' }),
  );
  expect(response.error).toBeUndefined();
  const [occurrence] = await h.read.occurrences();
  expect(occurrence!.state).toBe('claimed');
  // While this process was sending it, the pass had nothing to do for it and opened no transaction to say so.
  expect(duringRelease).toEqual([]);
  runtime.onLaunch = async () => undefined;
  await h.engine.tick();
  // Once the release ended, the occurrence is the passes' again (a launch already `sending` is still not re-sent).
  expect(dispatched).toEqual([occurrence!.occurrenceId]);
  expect(runtime.launches).toHaveLength(0);
});

test('a pass plans and dispatches a scheduled slot in one commit before the runtime is called: its claim, acceptance, adoption and the sending launch', async () => {
  const runtime = new WatchedRuntime();
  const h = await harness({ runtime, start: '2026-03-02T09:00:00.000Z' });
  let commits = 0;
  h.store.onCommit(() => (commits += 1));
  let atLaunch: { commits: number; outbox: string[]; runs: string[] } | undefined;
  let claimedAt: number | undefined;
  h.engine.services.observer = (transitions) => {
    if (transitions.some((t) => t.entity === 'occurrence' && t.to === 'claimed')) claimedAt = commits;
  };
  runtime.onLaunch = async () => {
    const outbox = await h.store.read((r) => r.list<{ snapshot: { value: string } }>(KINDS.outbox));
    atLaunch = { commits, outbox: outbox.map((o) => o.data.snapshot.value), runs: (await h.read.runs()).map(stateOf) };
  };
  const report = await h.engine.tick();
  expect(report.launched).toBe(1);
  // The claim's commit is the last before the side effect, and it already holds the `sending` mark.
  expect(atLaunch!.commits).toBe(claimedAt!);
  expect(atLaunch!.outbox).toEqual(['sending']);
  expect(atLaunch!.runs).toEqual(['running']);
  // The launch answer is the next commit.
  expect(commits).toBe(claimedAt! + 1);
  expect((await h.read.attempts()).map(stateOf)).toEqual(['started']);
});

test('a pass’s dispatch whose commit fails launches nothing and leaves the engine owning no launch; the next pass launches once', async () => {
  const runtime = new WatchedRuntime();
  // The planning commit that carries the launch fails (the slot is then planned alone), and so does the dispatch
  // phase's commit of the same launch.
  const store = new FailingFirstLaunchStore(2);
  const h = await harness({ runtime, store, start: '2026-03-02T09:00:00.000Z' });
  const failed = await h.engine.tick();
  expect(store.failed).toBe(true);
  expect(failed.errors.map((e) => e.message)).toEqual([expect.stringContaining('disk full')]);
  expect(runtime.launches).toEqual([]);
  expect(await h.store.read((r) => r.list(KINDS.outbox))).toEqual([]);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
  const retried = await h.engine.tick();
  expect(retried.launched).toBe(1);
  expect(runtime.launches).toHaveLength(1);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
});

test('a pass’s dispatch whose commit stood but whose after-commit observer threw still sends its launch, once', async () => {
  const runtime = new WatchedRuntime();
  const h = await harness({ runtime, start: '2026-03-02T09:00:00.000Z' });
  let broken = false;
  h.engine.services.observer = (transitions) => {
    if (broken || !transitions.some((t) => t.entity === 'attempt' && t.to === 'dispatching')) return;
    broken = true;
    throw new Error('observer broke');
  };
  const report = await h.engine.tick();
  expect(broken).toBe(true);
  expect(report.errors.map((e) => e.message)).toEqual([expect.stringContaining('observer broke')]);
  // The commit is durable and holds the `sending` mark: left unsent, only lease expiry could have decided it.
  expect(runtime.launches).toHaveLength(1);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
  await h.engine.tick();
  expect(runtime.launches).toHaveLength(1);
  expect((await h.read.attempts()).map(stateOf)).toEqual(['started']);
});

test('a run-now whose after-commit observer threw still sends its launch, once, and the engine owns no launch after', async () => {
  const runtime = new WatchedRuntime();
  const h = await harness({ runtime });
  let broken = false;
  h.engine.services.observer = (transitions) => {
    if (broken || !transitions.some((t) => t.entity === 'attempt' && t.to === 'dispatching')) return;
    broken = true;
    throw new Error('observer broke');
  };
  const response = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: 'manual-observer-broke' }),
  );
  expect(response.outcome).toBe('committed');
  expect(broken).toBe(true);
  expect(runtime.launches).toHaveLength(1);
  expect(h.engine.services.launchesInFlight.size).toBe(0);
  expect((await h.read.attempts()).map(stateOf)).toEqual(['started']);
});
