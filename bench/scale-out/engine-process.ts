// One engine process of the scale-out fault test and bench: an engine on the store COVEN_STORE names (a
// PostgreSQL URL shared with other engine processes, or a file) with the ledger runtime, on a clock every
// engine shares (real time shifted by COVEN_CLOCK_OFFSET_MS), naming the host COVEN_ENGINE_HOST (when set) in its
// owner lease, so engines on one machine can stand for engines on several. Prints `ready <instanceId>` once it runs,
// `settled <n>` for each pass that settled attempts (n of them), each pass error as it happens, and with
// COVEN_ENGINE_PASSES=1 each pass's report and `live <n>` whenever the live occurrence count a pass ends with changes
// (a read per pass, so only then). With COVEN_WARM_UP=n it first works a burst of n on a store of its own
// (warm-up.ts), prints `warmed`, and takes its clock offset from a `go <offset ms>` line on stdin instead of
// COVEN_CLOCK_OFFSET_MS, so the measured slot is set once every engine is warm. Stops on SIGTERM.
import { createEngine } from '../../src/engine/engine.js';
import { openStore } from '../../src/store/open-store.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { LedgerRuntime } from './ledger-runtime.js';
import { warmUp } from './warm-up.js';

const location = process.env.COVEN_STORE!;
const ledgerUrl = process.env.COVEN_LEDGER_URL!;
const label = process.env.COVEN_ENGINE_LABEL!;
const schema = process.env.COVEN_STORE_SCHEMA ?? 'coven';
const instanceId = `${label}-${process.pid}`;
const warmUpCount = Number(process.env.COVEN_WARM_UP ?? 0);

/** The first line on stdin that says `go <offset ms>`: the clock offset, sent once every engine is warm. */
function goLine(): Promise<number> {
  let text = '';
  return new Promise((go) => {
    process.stdin.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const line = /^go (-?\d+)$/m.exec(text);
      if (line !== null) go(Number(line[1]));
    });
  });
}

let offset = Number(process.env.COVEN_CLOCK_OFFSET_MS ?? 0);
if (warmUpCount > 0) {
  await warmUp({ location, ledgerUrl, schema, label, count: warmUpCount });
  process.stdout.write('warmed\n');
  offset = await goLine();
}

const store = location.startsWith('postgres')
  ? await PostgresStore.open(location, { schema, applicationName: `coven ${label}` })
  : await openStore(location);
const runtime = new LedgerRuntime(ledgerUrl, instanceId, location.startsWith('postgres') ? schema : undefined);
await runtime.connectAll();
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
  if (!passes) return;
  void store
    .read((r) => r.liveWork('occurrence'))
    .then((ids) => {
      if (ids.length !== live) process.stdout.write(`live ${(live = ids.length)}\n`);
    });
});
process.stdout.write(`ready ${instanceId}\n`);
process.on('SIGTERM', () => {
  void engine
    .stop()
    .then(() => store.close())
    .then(() => runtime.close())
    .then(() => process.exit(0));
});
