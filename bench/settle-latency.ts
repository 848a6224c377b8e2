// Where a run-now's time goes, on one engine over a SQLite store (synchronous=FULL; `--store json`: the JSON store,
// fsync per commit; `--store postgres`: a throwaway PostgreSQL cluster, fsync on) with an in-process runtime
// whose sessions exit at once: steady open-loop arrivals of run-now requests, as the peer bench's steady
// workload sends them, with each occurrence's milestones timed (request sent, launch called, launch answer
// committed, run settled), every pass counted, and the process's CPU time (engine and this harness alike) from the
// first arrival until every run settled, per settled run, with the event loop's delay over the same window. `--push`
// gives the runtime the session-exit capability, `--poll` hides it (settling then waits for a pass); both by
// default, one after the other, on fresh stores.
//
// The requests at or above the complete p95 are also counted by the second of the window they arrived in: a tail
// that clusters at the same seconds in every run has a periodic cause (on the JSON store, its folds: hold them off
// with `--compact-at-bytes`, the journal size from which the store folds).
//
//   npx tsx bench/settle-latency.ts [--rate 2000] [--seconds 10] [--push | --poll] [--store sqlite|json|postgres]
//     [--compact-at-bytes N]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine, type Engine } from '../src/engine/engine.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { openStore, type FileStore } from '../src/store/open-store.js';
import { JsonFileStore } from '../src/store/json/index.js';
import { startCluster } from '../test/support/postgres-cluster.js';
import { sha256Hex } from '../src/contract/digest.js';
import { command, definition, ExitingRuntime } from './fixtures.js';
import { table } from './stats.js';

/** Definitions taken in turn (overlap is forbidden, so each needs its previous run settled first). */
const SLOTS = 200;
const DRAIN_LIMIT_MS = 30_000;

interface Timeline {
  due: number;
  accepted?: number;
  sending?: number;
  launched?: number;
  started?: number;
  answered?: number;
  settled?: number;
}

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};

/** The JSON store's options: its fold threshold when `--compact-at-bytes` names one. */
const jsonOptions = () => {
  const bytes = flag('compact-at-bytes', Number.NaN);
  return Number.isNaN(bytes) ? {} : { compactAtBytes: bytes };
};

/** The requests at or above the complete p95, counted by the second of the window they arrived in. */
function slowestBySecond(done: Timeline[]): string {
  const p95 = quantile(
    done.map((l) => l.settled! - l.due),
    0.95,
  );
  const first = Math.min(...done.map((l) => l.due));
  const bySecond = new Map<number, number>();
  for (const l of done)
    if (l.settled! - l.due >= p95) {
      const second = Math.floor((l.due - first) / 1000);
      bySecond.set(second, (bySecond.get(second) ?? 0) + 1);
    }
  return [...bySecond].map(([second, n]) => `${second} s: ${n}`).join(', ');
}

async function setUp(engine: Engine): Promise<void> {
  const rrule = `FREQ=DAILY;BYHOUR=${(new Date().getUTCHours() + 12) % 24}`;
  for (let i = 0; i < SLOTS; i++) {
    const id = `lat-${String(i).padStart(4, '0')}`;
    await command(engine, 'definition.create.v1', { definition: definition(id, 1, 'draft', rrule) });
    await command(engine, 'definition.revise.v1', { definition: definition(id, 2, 'paused', rrule) }, 1);
    await command(engine, 'definition.activate.v1', { automationId: id }, 2);
  }
}

/** One measured run on a fresh store: each occurrence's timeline, the passes run, and the requests refused. */
async function measure(push: boolean, rate: number, seconds: number) {
  const dir = mkdtempSync(join(tmpdir(), 'coven-settle-'));
  const cluster = process.argv.includes('postgres') ? await startCluster() : undefined;
  const store: FileStore =
    cluster !== undefined
      ? await openStore(cluster.url as `postgres://${string}`)
      : process.argv.includes('json')
        ? await JsonFileStore.open(join(dir, 'store.json'), jsonOptions())
        : await SqliteStore.open(join(dir, 'store.sqlite'));
  const byOccurrence = new Map<string, Timeline>();
  const runtime = new ExitingRuntime(push, (id) => {
    const t = byOccurrence.get(id);
    if (t !== undefined) t.launched = performance.now();
  });
  const engine = createEngine({ store, runtimes: [runtime], passConcurrency: 16, retention: false });
  await setUp(engine);
  let passes = 0;
  engine.services.observer = (transitions) => {
    for (const t of transitions) {
      const line = byOccurrence.get(t.entity === 'occurrence' ? t.id : String(t.context.occurrenceId));
      if (line === undefined) continue;
      if (t.entity === 'attempt' && t.to === 'started') line.started = performance.now();
      if (t.entity === 'run' && t.to === 'accepted') line.accepted = performance.now();
      if (t.entity === 'run' && t.to === 'running') line.sending = performance.now();
      if (t.entity === 'occurrence' && t.to === 'succeeded') line.settled = performance.now();
    }
  };
  engine.start(() => void (passes += 1));
  await sleep(1000);
  const passesBefore = passes;
  const cpuBefore = process.cpuUsage();
  // How long the event loop was kept from running a ready callback: a request waits at least that long.
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const { lines, refused } = await arrivals(engine, byOccurrence, rate, seconds);
  const deadline = performance.now() + DRAIN_LIMIT_MS;
  while (lines.some((l) => l.settled === undefined) && performance.now() < deadline) await sleep(5);
  const cpu = process.cpuUsage(cpuBefore);
  loop.disable();
  const loopMs = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
  await engine.stop();
  await store.close();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
  return { lines, refused, passes: passes - passesBefore, cpuMs: (cpu.user + cpu.system) / 1000, loopMs };
}

async function arrivals(engine: Engine, byOccurrence: Map<string, Timeline>, rate: number, seconds: number) {
  const total = Math.round((rate / 60) * seconds);
  const interval = 60_000 / rate;
  const begin = performance.now();
  const sent: Array<Promise<void>> = [];
  const lines: Timeline[] = [];
  let refused = 0;
  for (let i = 0; i < total; i++) {
    const due = begin + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const automationId = `lat-${String(i % SLOTS).padStart(4, '0')}`;
    const line: Timeline = { due };
    // run-now names its occurrence after the adoption key, so the milestones before its answer find the line.
    const adoptionKey = `lat-run-${i}`;
    byOccurrence.set(`occ-manual-${sha256Hex(adoptionKey).slice(0, 32)}`, line);
    const answered = engine.commands.handle(runNowCommand(automationId, adoptionKey)).then((response) => {
      if (response.outcome === 'rejected') return void (refused += 1);
      line.answered = performance.now();
      lines.push(line);
    });
    sent.push(answered);
  }
  await Promise.all(sent);
  return { lines, refused };
}

const runNowCommand = (automationId: string, adoptionKey: string) => ({
  schemaVersion: 'coven.automations.v1',
  command: 'occurrence.runNow.v1',
  adoptionKey,
  origin: { principal: { principalId: 'principal:bench' }, channel: 'cli' },
  intent: { statement: 'bench' },
  payload: { automationId },
});

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

/** Each measured span: its name and the milestones it runs between. */
const SPANS: Array<[string, keyof Timeline, keyof Timeline]> = [
  ['run-now commit(s) to acceptance', 'due', 'accepted'],
  ['acceptance to sending', 'accepted', 'sending'],
  ['to the launch call', 'sending', 'launched'],
  ['launch answer commit', 'launched', 'started'],
  ['settle commit', 'started', 'settled'],
  ['start (due to launch)', 'due', 'launched'],
  ['complete (due to settled)', 'due', 'settled'],
];

async function main(): Promise<void> {
  const rate = flag('rate', 2000);
  const seconds = flag('seconds', 10);
  const modes = process.argv.includes('--push') ? [true] : process.argv.includes('--poll') ? [false] : [false, true];
  const head = ['ms (p50 / p95)'];
  const columns: string[][] = [];
  const tails: string[] = [];
  for (const push of modes) {
    const { lines, refused, passes, cpuMs, loopMs } = await measure(push, rate, seconds);
    const done = lines.filter((l) => l.settled !== undefined);
    const perJob = (cpuMs / done.length).toFixed(2);
    tails.push(`${push ? 'cues' : 'passes only'}, slowest 5 % by second of arrival: ${slowestBySecond(done)}`);
    head.push(
      `${push ? 'cues' : 'passes only'} (${done.length}/${lines.length + refused} settled, ${passes} passes, ` +
        `CPU ${perJob} ms per settled run, event loop delay p99 ${loopMs.p99.toFixed(1)} / max ` +
        `${loopMs.max.toFixed(1)} ms)`,
    );
    columns.push(
      SPANS.map(([, from, to]) => {
        const xs = done.flatMap((l) => {
          const [a, b] = [l[from], l[to]];
          return a === undefined || b === undefined ? [] : [b - a];
        });
        return `${quantile(xs, 0.5).toFixed(2)} / ${quantile(xs, 0.95).toFixed(2)}`;
      }),
    );
  }
  const rows = SPANS.map(([name], i) => [name, ...columns.map((c) => c[i]!)]);
  process.stdout.write(`${rate}/min for ${seconds} s, load ${loadavg()[0]!.toFixed(2)}\n${table(head, rows)}\n`);
  process.stdout.write(`${tails.join('\n')}\n`);
}

await main();
