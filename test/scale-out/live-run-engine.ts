// One engine process of the one-live-run race test: an engine on the PostgreSQL store COVEN_STORE names (schema
// COVEN_STORE_SCHEMA) with the ledger runtime, answering JSON lines on stdin, each at the instant it names:
// {id, op: 'tick', now} runs a pass; {id, op: 'runNow', now, envelope} handles a run-now command. Each answer
// is one JSON line on stdout with the request's id; `ready` is printed once the engine is up.
import { createInterface } from 'node:readline';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine } from '../../src/engine/engine.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { LedgerRuntime } from '../../bench/scale-out/ledger-runtime.js';

const url = process.env.COVEN_STORE!;
const schema = process.env.COVEN_STORE_SCHEMA!;
const label = process.env.COVEN_ENGINE_LABEL!;

const store = await PostgresStore.open(url, { schema, poolSize: 4, applicationName: `coven ${label}` });
const runtime = new LedgerRuntime(url, label, schema);
const clock = new SimulatedClock(new Date(0));
const engine = createEngine({ store, clock, runtimes: [runtime], instanceId: label, retention: false });

interface Request {
  id: number;
  op: 'tick' | 'runNow';
  now: string;
  envelope?: unknown;
}

async function answer(request: Request): Promise<Record<string, unknown>> {
  // The test sets one instant for every engine: requests of one race all name the same.
  clock.set(request.now);
  if (request.op === 'runNow') return { response: await engine.commands.handle(request.envelope) };
  const report = await engine.tick();
  return { errors: report.errors.map((e) => e.message), contended: report.contended };
}

process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line) as Request;
  void answer(request).then(
    (result) => process.stdout.write(`${JSON.stringify({ id: request.id, ...result })}\n`),
    (error: unknown) => process.stdout.write(`${JSON.stringify({ id: request.id, failed: String(error) })}\n`),
  );
}
await engine.stop();
await store.close();
await runtime.close();
