import { beforeAll, expect, test } from 'vitest';
import { COMMIT_WAKE_MS, createEngine, type Engine } from '../../src/engine/engine.js';
import { systemTimers, type EngineTimers, type PassTrigger } from '../../src/engine/timers.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { eventually } from '../support/eventually.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { propertySeed } from '../support/property.js';

/** CI's rounds; COVEN_STRESS=1 runs many more. */
const ROUNDS = process.env.COVEN_STRESS === '1' ? 400 : 40;
/** Stores committing in the background through the first half of the rounds: the engines' passes overlap commits. */
const BACKGROUND_WRITERS = 2;
const ENGINES = 2;
/** A loaded machine delivers a notification late; a lost one would wait out the 60 s maximum sleep. */
const WAKE_DEADLINE_MS = 15_000;

interface Armed {
  readonly setAt: number;
  readonly delayMs: number;
  readonly trigger: PassTrigger;
  firedAt?: number;
}

/** The host's timers, each pass's timer written down with when it was set and when it fired. */
function recordingTimers(log: Armed[]): EngineTimers {
  return {
    ...systemTimers,
    setTimeout: (fire, delayMs, trigger) => {
      const armed: Armed = { setAt: performance.now(), delayMs, trigger };
      log.push(armed);
      return setTimeout(() => {
        armed.firedAt = performance.now();
        fire();
      }, delayMs);
    },
  };
}

/** A small deterministic generator (mulberry32), so a failing round can be replayed from the printed seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describePostgres('a commit by one engine wakes the others', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'commit_wake');
  });

  test('within the commit-wake delay, whether they are sleeping or in a pass, round after round', async () => {
    const next = random(propertySeed('commit wake'));
    const open = (label: string) => PostgresStore.open(url, { schema: 'wake', applicationName: `coven ${label}` });
    const stores = await Promise.all(Array.from({ length: ENGINES }, (_, i) => open(`engine-${i}`)));
    const logs = stores.map((): Armed[] => []);
    const engines: Engine[] = stores.map((store, i) =>
      createEngine({
        store,
        runtimes: [new SimulatedRuntime()],
        instanceId: `engine-${i}`,
        timers: recordingTimers(logs[i]!),
        retention: false,
      }),
    );
    const committer = await open('committer');
    const background = await Promise.all(Array.from({ length: BACKGROUND_WRITERS }, (_, i) => open(`writer-${i}`)));
    let running = true;
    const load = background.map(async (store, w) => {
      for (let n = 0; running; n++)
        await store.transact((tx) => tx.put('load', `w${w}-${n}`, { n }, { expectedVersion: null }));
    });
    engines.forEach((engine) => engine.start());
    // Every engine listens before the rounds start: its first pass has run.
    await eventually(async () => (logs.every((log) => log.some((a) => a.firedAt !== undefined)) ? true : undefined));
    const late: string[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        // The second half runs without background load: the engines sleep (nothing is due) between rounds.
        if (round === ROUNDS / 2) {
          running = false;
          await Promise.all(load);
        }
        // Some rounds commit at once, others after a few reads, so the commit lands at different points of a pass.
        const reads = Math.floor(next() * 4);
        for (let i = 0; i < reads; i++) await committer.read((r) => r.get('load', 'w0-0'));
        await committer.transact((tx) => tx.put('round', String(round), { round }, { expectedVersion: null }));
        const committedAt = performance.now();
        // Each engine's pass that begins after the commit, on a timer of at most the commit-wake delay.
        const woken = await Promise.all(
          logs.map((log) =>
            eventually(async () => {
              const pass = log.find((a) => a.firedAt! >= committedAt && a.delayMs <= COMMIT_WAKE_MS);
              return pass === undefined ? undefined : pass.firedAt! - committedAt;
            }, WAKE_DEADLINE_MS).catch(() => Number.POSITIVE_INFINITY),
          ),
        );
        woken.forEach((ms, i) => {
          if (ms === Number.POSITIVE_INFINITY)
            late.push(`round ${round}: engine-${i} not woken in ${WAKE_DEADLINE_MS} ms`);
        });
      }
    } finally {
      running = false;
      await Promise.all(load);
      await Promise.all(engines.map((engine) => engine.stop()));
      await Promise.all([...stores, committer, ...background].map((store) => store.close()));
    }
    expect(late).toEqual([]);
  }, 600_000);
});
