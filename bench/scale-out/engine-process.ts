// One engine process of the scale-out fault test and bench: an engine on the store COVEN_STORE names (a
// PostgreSQL URL shared with other engine processes, or a file) with the ledger runtime, on a clock every
// engine shares (real time shifted by COVEN_CLOCK_OFFSET_MS), naming the host COVEN_ENGINE_HOST (when set) in its
// owner lease, so engines on one machine can stand for engines on several. Prints `ready <instanceId>` once it runs,
// `live <n>` whenever the live occurrence count a pass ends with changes, `settled <n>` for each pass that
// settled attempts (n of them), each pass error as it happens, and
// `cpu <µs>` (its own CPU time since ready) when stopped with SIGTERM.
import { createEngine } from '../../src/engine/engine.js';
import { openStore } from '../../src/store/open-store.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { LedgerRuntime } from './ledger-runtime.js';

const location = process.env.COVEN_STORE!;
const ledgerUrl = process.env.COVEN_LEDGER_URL!;
const label = process.env.COVEN_ENGINE_LABEL!;
const offset = Number(process.env.COVEN_CLOCK_OFFSET_MS ?? 0);
const schema = process.env.COVEN_STORE_SCHEMA ?? 'coven';
const instanceId = `${label}-${process.pid}`;

const store = location.startsWith('postgres')
  ? await PostgresStore.open(location, { schema, applicationName: `coven ${label}` })
  : await openStore(location);
const runtime = new LedgerRuntime(ledgerUrl, instanceId, location.startsWith('postgres') ? schema : undefined);
const engine = createEngine({
  store,
  runtimes: [runtime],
  clock: { now: () => new Date(Date.now() + offset) },
  instanceId,
  leaseSeconds: Number(process.env.COVEN_LEASE_SECONDS ?? 4),
  ...(process.env.COVEN_ENGINE_HOST === undefined ? {} : { host: process.env.COVEN_ENGINE_HOST }),
  retention: false,
});
let live = -1;
const passes = process.env.COVEN_ENGINE_PASSES === '1';
engine.start((report) => {
  if (passes)
    process.stdout.write(
      `pass ${JSON.stringify({ at: Date.now(), settled: report.settled, launched: report.launched, contended: report.contended, passedOver: report.passedOver, phaseMs: report.phaseMs })}\n`,
    );
  for (const error of report.errors) process.stdout.write(`error ${error.message.split('\n')[0]}\n`);
  if (report.settled > 0) process.stdout.write(`settled ${report.settled}\n`);
  void store
    .read((r) => r.liveWork('occurrence'))
    .then((ids) => {
      if (ids.length !== live) process.stdout.write(`live ${(live = ids.length)}\n`);
    });
});
// CPU is counted from here: loading the code (tsx compiles it) and opening the store are not the engine's work.
const readyCpu = process.cpuUsage();
process.stdout.write(`ready ${instanceId}\n`);
process.on('SIGTERM', () => {
  void engine
    .stop()
    .then(() => store.close())
    .then(() => runtime.close())
    .then(() => {
      const { user, system } = process.cpuUsage(readyCpu);
      process.stdout.write(`cpu ${user + system}\n`);
      process.exit(0);
    });
});
