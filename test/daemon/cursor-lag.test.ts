import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore, type FileStore } from '../../src/store/open-store.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { observabilityRoutes } from '../../src/daemon/observability-routes.js';
import { createEngineMetrics, type EngineMetrics } from '../../src/observability/metrics.js';
import type { DoctorReport } from '../../src/observability/doctor.js';
import { command, definitionBody, expectCommitted } from '../support/commands.js';
import { eventually } from '../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cursor-lag-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let store: FileStore;
let engine: Engine;
let metrics: EngineMetrics;
let daemon: Daemon;
const streams: IncomingMessage[] = [];

beforeEach(async () => {
  store = await openStore(join(mkdtempSync(join(dir, 'store-')), 'automations.json'));
  engine = createEngine({ store, runtimes: [new SimulatedRuntime()] });
  metrics = createEngineMetrics({ engine, store });
  const plugins = [observabilityRoutes({ metrics })];
  daemon = await startDaemon({ engine, store, storeFile: store.file, listen: { host: '127.0.0.1', port: 0 }, plugins });
});
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.destroy();
  await daemon.close();
  metrics.dispose();
  await store.close();
});

let created = 0;
/** Commits `count` definition.created events, each on a new automation's stream. */
async function commit(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const definition = definitionBody(`job-${++created}`);
    expectCommitted(await engine.commands.handle(command('definition.create.v1', { definition })));
  }
}

const head = async () => (await store.read((r) => r.readFeed({ after: -1, limit: 100_000 }))).length - 1;

/** The doctor over HTTP, as an operator's browser or `curl` asks it. */
async function lagFinding(): Promise<string | undefined> {
  const report = (await (await fetch(`${daemon.url}/api/v1/doctor`)).json()) as DoctorReport;
  return report.findings.find((f) => f.code === 'events.cursor-lag')?.observed;
}

/** An SSE subscriber on the owner's Unix socket; nothing reads its body until the test does. */
function subscribe(query: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: daemon.socketPath, path: `/api/v1/events?${query}` }, (response) => {
      streams.push(response);
      resolve(response);
    });
    req.once('error', reject);
    req.end();
  });
}

/** Reads a subscriber's stream, remembering the last `id:` it was sent. */
function consume(response: IncomingMessage): { last: () => number } {
  let last = -1;
  let text = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    text += chunk;
    const ids = [...text.matchAll(/^id: (\d+)$/gm)];
    if (ids.length > 0) last = Number(ids[ids.length - 1]![1]);
    text = text.slice(text.lastIndexOf('\n\n') + 2);
  });
  return { last: () => last };
}

describe("the doctor over HTTP sees the daemon's SSE subscribers", () => {
  test('a subscriber that stops reading is reported as events.cursor-lag; once it catches up, no finding', async () => {
    await commit(2);
    const reader = consume(await subscribe('after=-1'));
    const stalled = await subscribe('after=-1');
    // Subscribed to one stream that gets nothing new: commits elsewhere must not make it look behind.
    await subscribe('stream=automation/job-1&after=-1');
    let observed: string | undefined;
    // The socket buffers what the stalled client does not read; commit until they are full and it falls behind.
    for (let batch = 0; observed === undefined && batch < 100; batch++) {
      await commit(25);
      const target = await head();
      await eventually(async () => (reader.last() === target ? true : undefined), 20_000);
      observed = await lagFinding();
    }
    expect(observed).toMatch(/^subscriber sse-2 at position \d+ is \d+ events behind$/);
    const [, position, behind] = /at position (\d+) is (\d+)/.exec(observed!)!.map(Number);
    expect(position! + behind!).toBe(await head());
    expect(behind).toBeGreaterThan(3);
    // It reads again: everything pending reaches it, and the doctor has nothing more to say.
    const resumed = consume(stalled);
    const target = await head();
    await eventually(async () => (resumed.last() === target ? true : undefined), 20_000);
    await eventually(async () => ((await lagFinding()) === undefined ? true : undefined), 20_000);
  }, 120_000);

  test('caught-up subscribers give no finding; one that left is no longer judged', async () => {
    await commit(3);
    const reader = consume(await subscribe('after=-1'));
    const late = consume(await subscribe('after=1'));
    await commit(10);
    const target = await head();
    await eventually(async () => (reader.last() === target && late.last() === target ? true : undefined));
    expect(await lagFinding()).toBeUndefined();
    const gone = await subscribe('after=-1');
    gone.destroy();
    await eventually(async () => (gone.socket === null || gone.socket.destroyed ? true : undefined));
    await commit(10);
    await eventually(async () => (reader.last() === target + 10 ? true : undefined));
    await eventually(async () => ((await lagFinding()) === undefined ? true : undefined));
  }, 60_000);
});
