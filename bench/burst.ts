// The peer bench's burst workload for coven alone, in this process, so it can run under a profiler
// (`node --cpu-prof --import tsx bench/burst.ts`): n definitions, one run-now of each with `--concurrency`
// requests in flight, a runtime whose sessions exit at once and cue that exit, on one engine running as a daemon
// runs it. Prints the makespan (first request → last `succeeded` commit) and the process's CPU over that window,
// on PostgreSQL its cluster's too. `--profile FILE` writes a CPU profile of that window alone (set-up excluded), for
// Chrome DevTools or any .cpuprofile reader; `--passes` sums the passes that ran in it; `--waits` (PostgreSQL) counts
// what the store's backends were doing through it (bench/wait-sampler.ts); `--peers N` (PostgreSQL) starts N more
// engines in this process, each with its own store on the same schema and nothing asked of it, and counts the passes
// the burst's commits woke in them (their CPU is in the process's).
//
//   npx tsx bench/burst.ts [--store sqlite|json|postgres|memory] [--jobs 1000] [--concurrency 16] [--groups N]
//     [--profile FILE] [--passes] [--waits] [--peers N]
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { createEngine, type Engine } from '../src/engine/engine.js';
import type { TickReport } from '../src/engine/pass-phases.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { PostgresStore } from '../src/store/postgres/index.js';
import { command, definition, ExitingRuntime, pooled, send } from './fixtures.js';
import { serverCpuSeconds } from './server-cpu.js';
import { sampleWaits } from './wait-sampler.js';
import { cellStore, type CellStoreKind } from './slo-store.js';

const option = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1]!;
};

async function defineAll(engine: Engine, ids: string[]): Promise<void> {
  // Due once a day, twelve hours from now: the scheduler plans nothing while the burst runs.
  const rrule = `FREQ=DAILY;BYHOUR=${(new Date().getUTCHours() + 12) % 24}`;
  await pooled(ids, 32, async (id) => {
    await command(engine, 'definition.create.v1', { definition: definition(id, 1, 'draft', rrule) });
    await command(engine, 'definition.revise.v1', { definition: definition(id, 2, 'paused', rrule) }, 1);
    await command(engine, 'definition.activate.v1', { automationId: id }, 2);
  });
}

/** Starts the CPU profiler when a file is named; answers how to stop it and write the profile there. */
async function startProfiler(file: string): Promise<(() => Promise<void>) | undefined> {
  if (file === '') return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

/** The passes that ran during the burst, summed: what a burst costs the scheduler beside the run-nows. */
function passSummary(passes: TickReport[]): string {
  const sum = (f: (r: TickReport) => number) => passes.reduce((total, r) => total + f(r), 0);
  const phases = Object.keys(passes[0]?.phaseMs ?? {}) as (keyof TickReport['phaseMs'])[];
  const byPhase = phases.map((phase) => `${phase} ${sum((r) => r.phaseMs[phase]).toFixed(0)}`).join(', ');
  return (
    `passes: ${passes.length}, launched ${sum((r) => r.launched)}, settled ${sum((r) => r.settled)}; ` +
    `phase ms: ${byPhase}`
  );
}

/** `count` engines on their own stores of the database at `url`, started with nothing to do; counting passes. */
async function idlePeers(url: string, count: number) {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const store = await PostgresStore.open(url, { applicationName: `coven peer ${i}` });
      const engine = createEngine({ store, runtimes: [new ExitingRuntime()], instanceId: `peer-${i}` });
      const peer = { passes: 0, close: async () => (await engine.stop(), await store.close()) };
      // Its first pass (startup) runs before the burst; only passes the burst woke are counted.
      let started = false;
      await new Promise<void>((resolve) =>
        engine.start(() => {
          if (started) peer.passes++;
          else {
            started = true;
            resolve();
          }
        }),
      );
      return peer;
    }),
  );
}

async function main(): Promise<void> {
  const kind = option('store', 'sqlite');
  const jobs = Number(option('jobs', '1000'));
  const concurrency = Number(option('concurrency', '16'));
  // `memory`: the engine's own work with a store that keeps nothing durable, the floor under every store's figure.
  const where = kind === 'memory' ? undefined : await cellStore(kind as CellStoreKind);
  const cluster = where?.cluster;
  try {
    const groups = Number(option('groups', '1'));
    const store =
      where === undefined
        ? new MemoryStore()
        : cluster === undefined
          ? await where.open()
          : await PostgresStore.open(cluster.url, { parallelGroups: groups });
    const engine = createEngine({ store, runtimes: [new ExitingRuntime()], passConcurrency: concurrency });
    const ids = Array.from({ length: jobs }, (_, i) => `burst-${String(i).padStart(5, '0')}`);
    await defineAll(engine, ids);
    let succeeded = 0;
    let allDone: () => void = () => {};
    const done = new Promise<void>((resolve) => (allDone = resolve));
    engine.services.observer = (transitions) => {
      for (const t of transitions)
        if (t.entity === 'occurrence' && t.to === 'succeeded' && ++succeeded === jobs) allDone();
    };
    const passes: TickReport[] = [];
    engine.start((report) => passes.push(report));
    const peers = cluster === undefined ? [] : await idlePeers(cluster.url, Number(option('peers', '0')));
    const profiler = await startProfiler(option('profile', ''));
    const stopWaits =
      cluster !== undefined && process.argv.includes('--waits') ? await sampleWaits(cluster.url) : undefined;
    const began = performance.now();
    const cpuBefore = process.cpuUsage();
    const serverBefore = cluster === undefined ? 0 : serverCpuSeconds(cluster);
    await pooled(ids, concurrency, async (automationId) => {
      const response = await send(engine, 'occurrence.runNow.v1', { automationId });
      if (response.outcome === 'rejected') throw new Error(`run-now ${automationId}: ${response.error!.code}`);
    });
    await done;
    const waits = await stopWaits?.();
    const makespanS = (performance.now() - began) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const serverS = cluster === undefined ? 0 : serverCpuSeconds(cluster) - serverBefore;
    await profiler?.();
    const peerPasses = peers.reduce((total, peer) => total + peer.passes, 0);
    for (const peer of peers) await peer.close();
    await engine.stop();
    await store.close();
    const cpuS = (cpu.user + cpu.system) / 1e6;
    console.log(
      `${kind}: ${jobs} run-nows, ${concurrency} in flight: makespan ${makespanS.toFixed(2)} s, ` +
        `process CPU ${cpuS.toFixed(2)} s (${((cpuS * 1000) / jobs).toFixed(2)} ms per job)` +
        `${kind === 'postgres' ? `, server CPU ${serverS.toFixed(2)} s` : ''}, load ${loadavg()[0]!.toFixed(2)}`,
    );
    if (process.argv.includes('--passes')) console.log(passSummary(passes));
    if (peers.length > 0) console.log(`passes of ${peers.length} idle peer engines during the burst: ${peerPasses}`);
    if (waits !== undefined) console.log(`backend samples: ${waits.map(([c, n]) => `${c} ${n}`).join(', ')}`);
  } finally {
    await where?.dispose();
  }
}

await main();
