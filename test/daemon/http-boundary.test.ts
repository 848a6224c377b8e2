import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { ERROR_HTTP_STATUS } from '../../src/contract/errors.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { KINDS } from '../../src/domain/records.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore, type FileStore } from '../../src/store/open-store.js';
import { DaemonClient, startDaemon, type Daemon } from '../../src/daemon/index.js';
import { dashboardRoutes } from '../../src/daemon/dashboard-routes.js';
import { observabilityRoutes } from '../../src/daemon/observability-routes.js';
import { WITHHELD } from '../../src/daemon/tokenless-view.js';
import { createEngineMetrics } from '../../src/observability/metrics.js';
import { command, definitionBody } from '../support/commands.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-daemon-boundary-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What definitionBody's prompt and cwd say: neither may reach a tokenless TCP caller. */
const PROMPT = 'Write the daily notes.';
const CWD = 'work/notes';

interface World {
  store: FileStore;
  engine: Engine;
  daemon: Daemon;
  port: number;
  runId: string;
}
let world: World | undefined;
afterEach(async () => {
  await world?.daemon.close();
  await world?.store.close();
  world = undefined;
});

/** A daemon on loopback TCP with every plugin `start` serves, one automation that ran once. */
async function daemonWorld(publicReads = false): Promise<World> {
  const store = await openStore(join(mkdtempSync(join(dir, 'store-')), 'automations.json'));
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  const engine = createEngine({ store, clock, runtimes: [new SimulatedRuntime({ durationMs: 60_000 })] });
  const daemon = await startDaemon({
    engine,
    store,
    storeFile: store.file,
    listen: { host: '127.0.0.1', port: 0 },
    publicReads,
    plugins: [
      observabilityRoutes({ metrics: createEngineMetrics({ engine }) }),
      dashboardRoutes({ root: join(dir, 'no-build') }),
    ],
  });
  const owner = new DaemonClient({ socketPath: daemon.socketPath });
  const ok = async (envelope: unknown) => expect((await owner.handle(envelope)).outcome).toBe('committed');
  await ok(command('definition.create.v1', { definition: definitionBody('daily') }));
  await ok(
    command(
      'definition.revise.v1',
      { definition: definitionBody('daily', { revision: 2, lifecycleState: 'paused' }) },
      { expectedRevision: 1 },
    ),
  );
  await ok(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 2 }));
  clock.set('2026-03-02T09:00:00.000Z');
  await engine.tick();
  clock.set('2026-03-02T09:02:00.000Z');
  await engine.tick();
  const runId = (await store.read((r) => r.list(KINDS.run)))[0]!.id;
  world = { store, engine, daemon, port: Number(new URL(daemon.url!).port), runId };
  return world;
}

/** One HTTP request over loopback TCP with exactly these headers (node:http lets a test name any Host). */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        // The event stream never ends by itself: its status line is the answer this test needs.
        if (res.headers['content-type']?.startsWith('text/event-stream') === true) {
          req.destroy();
          resolve({ status: res.statusCode!, text });
        }
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const read = (name: string, payload: Record<string, unknown>) => command(name, payload);

/** One request of every route family the daemon serves, with the token, so only Host and Origin can refuse it. */
function everyRoute(w: World): Array<{ method: string; path: string; body?: unknown }> {
  const token = `token=${w.daemon.token}`;
  return [
    { method: 'POST', path: '/api/v1/actions', body: read('definition.get.v1', { automationId: 'daily' }) },
    { method: 'POST', path: '/api/v1/actions', body: command('definition.pause.v1', { automationId: 'daily' }) },
    { method: 'GET', path: '/healthz' },
    { method: 'GET', path: '/api/v1/capabilities' },
    { method: 'GET', path: `/api/v1/events?${token}` },
    { method: 'GET', path: `/api/v1/runs/${encodeURIComponent(w.runId)}/latest-attempt` },
    { method: 'GET', path: `/api/v1/daemon-proof?nonce=${'a'.repeat(64)}&${token}` },
    { method: 'GET', path: '/metrics' },
    { method: 'GET', path: '/api/v1/doctor' },
    { method: 'GET', path: '/' },
    { method: 'GET', path: '/assets/app.js' },
    { method: 'DELETE', path: '/no/such/route' },
  ];
}

describe('DNS rebinding: a foreign Host or Origin is refused on every route, before anything is read or written', () => {
  test('each route family answers AUTHORITY_REQUIRED (403) to a foreign Host, a foreign Origin and Origin null', async () => {
    const w = await daemonWorld();
    const feedBefore = await w.store.read((r) => r.readFeed({ limit: 10_000 }));
    const own = `127.0.0.1:${w.port}`;
    const foreign: Array<{ headers: Record<string, string>; field: string }> = [
      { headers: { host: `evil.example:${w.port}` }, field: 'host' },
      { headers: { host: 'evil.example' }, field: 'host' },
      { headers: { host: `127.0.0.1:${w.port + 1}` }, field: 'host' },
      { headers: { host: own, origin: `http://evil.example:${w.port}` }, field: 'origin' },
      { headers: { host: own, origin: 'null' }, field: 'origin' },
      { headers: { host: own, origin: `https://${own}` }, field: 'origin' },
    ];
    for (const route of everyRoute(w))
      for (const { headers, field } of foreign) {
        const authorization = `Bearer ${w.daemon.token}`;
        const answer = await send(w.port, route.method, route.path, { ...headers, authorization }, route.body);
        const what = `${route.method} ${route.path} ${JSON.stringify(headers)}`;
        expect(answer.status, what).toBe(ERROR_HTTP_STATUS.AUTHORITY_REQUIRED);
        expect(JSON.parse(answer.text), what).toMatchObject({
          outcome: 'rejected',
          error: { code: 'AUTHORITY_REQUIRED', details: { transport: 'tcp', field } },
        });
        expect(answer.text, what).not.toContain(PROMPT);
      }
    expect(await w.store.read((r) => r.readFeed({ limit: 10_000 }))).toEqual(feedBefore);
    const state = await new DaemonClient({ socketPath: w.daemon.socketPath }).handle(
      read('definition.get.v1', { automationId: 'daily' }),
    );
    expect(state.result).toMatchObject({ lifecycleState: 'active', revision: 3 });
  });

  test('a request without Host (HTTP/1.0) is refused with the typed envelope, not a bare 400', async () => {
    const w = await daemonWorld();
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(w.port, '127.0.0.1', () => socket.end('GET /healthz HTTP/1.0\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 403 /);
    expect(answer).toContain('"code":"AUTHORITY_REQUIRED"');
    expect(answer).toContain('Host none is not');
  });

  test("the daemon's own loopback names with its port are answered, in any case, with or without a same-origin Origin", async () => {
    const w = await daemonWorld();
    for (const host of [`127.0.0.1:${w.port}`, `LOCALHOST:${w.port}`, `[::1]:${w.port}`]) {
      expect((await send(w.port, 'GET', '/healthz', { host })).status, host).toBe(200);
      expect((await send(w.port, 'GET', '/healthz', { host, origin: `http://${host}` })).status, host).toBe(200);
    }
  });
});

/** Every read a tokenless TCP caller may send, as the dashboard and a script would send them. */
function tokenlessReads(w: World): Array<{ method: string; path: string; body?: unknown }> {
  const run = { runId: w.runId };
  return [
    { method: 'POST', path: '/api/v1/actions', body: read('definition.get.v1', { automationId: 'daily' }) },
    {
      method: 'POST',
      path: '/api/v1/actions',
      body: read('definition.get.v1', { automationId: 'daily', revision: 1 }),
    },
    { method: 'POST', path: '/api/v1/actions', body: read('definition.list.v1', {}) },
    { method: 'POST', path: '/api/v1/actions', body: read('definition.health.v1', { automationId: 'daily' }) },
    { method: 'POST', path: '/api/v1/actions', body: read('run.history.v1', { automationId: 'daily' }) },
    { method: 'POST', path: '/api/v1/actions', body: read('run.get.v1', run) },
    { method: 'POST', path: '/api/v1/actions', body: read('receipt.get.v1', run) },
    { method: 'POST', path: '/api/v1/actions', body: read('occurrence.list.v1', {}) },
    { method: 'POST', path: '/api/v1/actions', body: read('events.read.v1', { stream: { kind: 'feed', id: 'all' } }) },
    { method: 'GET', path: `/api/v1/runs/${encodeURIComponent(w.runId)}/latest-attempt` },
    { method: 'GET', path: '/api/v1/doctor' },
    { method: 'GET', path: '/healthz' },
  ];
}

describe('tokenless loopback TCP reads get no prompt, output or definition body', () => {
  test('every read answers, redacted: the definition is a summary, no prompt, cwd or store path anywhere', async () => {
    const w = await daemonWorld();
    const host = { host: `127.0.0.1:${w.port}` };
    for (const route of tokenlessReads(w)) {
      const answer = await send(w.port, route.method, route.path, host, route.body);
      const what = `${route.method} ${route.path} ${JSON.stringify(route.body ?? '').slice(0, 80)}`;
      expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBe(200);
      expect(answer.text, what).not.toContain(PROMPT);
      expect(answer.text, what).not.toContain(CWD);
      expect(answer.text, what).not.toContain(w.store.file);
    }
    const got = await send(
      w.port,
      'POST',
      '/api/v1/actions',
      host,
      read('definition.get.v1', { automationId: 'daily' }),
    );
    expect(JSON.parse(got.text).result.definition).toEqual({
      schemaVersion: 'coven.automations.v1',
      automationId: 'daily',
      revision: 3,
      integrity: expect.any(Object),
      lifecycleState: 'active',
      display: { name: 'Automation daily' },
      withheld: WITHHELD.definition,
    });
  });

  test('a receipt reads the same without the token: it holds no output, so the page can still verify it', async () => {
    const w = await daemonWorld();
    const get = read('receipt.get.v1', { runId: w.runId });
    const host = { host: `127.0.0.1:${w.port}` };
    const tokenless = await send(w.port, 'POST', '/api/v1/actions', host, get);
    const owner = await send(
      w.port,
      'POST',
      '/api/v1/actions',
      { ...host, authorization: `Bearer ${w.daemon.token}` },
      get,
    );
    expect(JSON.parse(tokenless.text).result.receipt).toEqual(JSON.parse(owner.text).result.receipt);
    expect(JSON.parse(owner.text).result.receipt).toMatchObject({ runId: w.runId, integrity: expect.any(Object) });
  });

  test('the token, the socket, and a daemon started with publicReads read the whole body', async () => {
    const w = await daemonWorld();
    const get = read('definition.get.v1', { automationId: 'daily' });
    const host = { host: `127.0.0.1:${w.port}` };
    const withToken = await send(
      w.port,
      'POST',
      '/api/v1/actions',
      { ...host, authorization: `Bearer ${w.daemon.token}` },
      get,
    );
    expect(JSON.parse(withToken.text).result.definition.action).toMatchObject({ prompt: PROMPT, cwd: CWD });
    const viaSocket = await new DaemonClient({ socketPath: w.daemon.socketPath }).handle(get);
    expect(JSON.stringify(viaSocket.result)).toContain(PROMPT);
    await w.daemon.close();
    await w.store.close();
    world = undefined;
    const open = await daemonWorld(true);
    const tokenless = await send(open.port, 'POST', '/api/v1/actions', { host: `127.0.0.1:${open.port}` }, get);
    expect(JSON.parse(tokenless.text).result.definition.action).toMatchObject({ prompt: PROMPT, cwd: CWD });
  });
});
