// memory.idle of a daemon at rest on a store a burst cell left behind, in a fresh process: the cell's own
// process also holds the harness (seeded history copies, every committed transition kept for the XState
// baseline) and the high-water mark of its heap, which a restarted daemon would not.
// Run by bench/slo-cell.ts: node --expose-gc .bench-build/bench/slo-idle.js --store sqlite --file F --at ISO [--retention-hours R]
// The daemon runs with its cell's retention (none unless R > 0): with retention on, a store written without it
// would first be backfilled (a one-time migration pass over every settled occurrence), which is not idling.
// Prints one JSON line: {"rssIdleMb": …, "heapUsedMb": …}.
import { createEngine } from '../src/engine/engine.js';
import { SimulatedClock } from '../src/clock/clock.js';
import { SimulatedRuntime } from '../src/runtime/simulated-runtime.js';
import { openStore, type FileStoreKind } from '../src/store/open-store.js';

const arg = (name: string, fallback?: string) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1 && fallback === undefined) throw new Error(`--${name} is required`);
  return i === -1 ? fallback! : process.argv[i + 1]!;
};

/** Passes run before measuring: the restart's recovery pass, then passes with nothing due, as a daemon idles. */
const IDLE_PASSES = 3;

// A PostgreSQL cell's `--file` is its cluster's connection string, which names the store's kind itself.
const kind = arg('store');
const store = await openStore(arg('file'), kind === 'postgres' ? undefined : (kind as FileStoreKind));
const clock = new SimulatedClock(arg('at'));
const retentionHours = Number(arg('retention-hours', '0'));
const retention = retentionHours > 0 ? { windowDays: { standard: retentionHours / 24 }, sweepEveryMinutes: 0 } : false;
const engine = createEngine({
  store,
  clock,
  runtimes: [new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 })],
  instanceId: 'bench-idle',
  retention,
});
try {
  for (let i = 0; i < IDLE_PASSES; i++) {
    const report = await engine.tick();
    if (report.errors.length > 0) throw new Error(`idle pass: ${report.errors.map((e) => e.message).join('; ')}`);
    if (report.planned + report.launched > 0)
      throw new Error(`idle pass at ${report.at} had work (${report.planned} planned, ${report.launched} launched)`);
    clock.advance({ minutes: 1 });
  }
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  process.stdout.write(
    `${JSON.stringify({ rssIdleMb: usage.rss / 1_048_576, heapUsedMb: usage.heapUsed / 1_048_576 })}\n`,
  );
} finally {
  await engine.stop();
  await store.close();
}
