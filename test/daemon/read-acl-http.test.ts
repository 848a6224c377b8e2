import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { KINDS } from '../../src/domain/records.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore, type FileStore } from '../../src/store/open-store.js';
import { DaemonClient, startDaemon, type Daemon } from '../../src/daemon/index.js';
import { observabilityRoutes } from '../../src/daemon/observability-routes.js';
import { createEngineMetrics } from '../../src/observability/metrics.js';
import { command, definitionBody } from '../support/commands.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-daemon-acl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let store: FileStore;
let engine: Engine;
let daemon: Daemon;
let owner: DaemonClient;
let runId: string;

/** `daily` ran once and is restricted to Ana; `other` is not restricted. Set up over the owner's socket. */
beforeEach(async () => {
  const file = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  store = await openStore(file);
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  engine = createEngine({ store, clock, runtimes: [new SimulatedRuntime({ durationMs: 60_000 })] });
  daemon = await startDaemon({
    engine,
    store,
    storeFile: store.file,
    listen: { host: '127.0.0.1', port: 0 },
    plugins: [observabilityRoutes({ metrics: createEngineMetrics({ engine }) })],
  });
  owner = new DaemonClient({ socketPath: daemon.socketPath });
  const ok = async (envelope: unknown) => expect((await owner.handle(envelope)).outcome).toBe('committed');
  for (const id of ['daily', 'other']) await ok(command('definition.create.v1', { definition: definitionBody(id) }));
  const paused = definitionBody('daily', { revision: 2, lifecycleState: 'paused' });
  await ok(command('definition.revise.v1', { definition: paused }, { expectedRevision: 1 }));
  await ok(command('definition.activate.v1', { automationId: 'daily' }, { expectedRevision: 2 }));
  clock.set('2026-03-02T09:00:00.000Z');
  await engine.tick();
  runId = (await store.read((r) => r.list(KINDS.run)))[0]!.id;
  await ok(command('x-coven-automata.acl.grant.v1', { automationId: 'daily', principalId: 'principal:ana' }));
});
afterEach(async () => {
  await daemon.close();
  await store.close();
});

/** A read as Ana over loopback TCP, with or without the daemon's token. */
async function read(name: string, payload: Record<string, unknown>, token?: string) {
  const envelope = command(name, payload);
  const body = { ...envelope, origin: { ...envelope.origin, principal: { principalId: 'principal:ana' } } };
  const response = await fetch(`${daemon.url!}/api/v1/actions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('the read ACL over the daemon', () => {
  test('loopback TCP without the token authenticated nobody: an envelope naming a granted principal is refused', async () => {
    const refused = await read('run.history.v1', { automationId: 'daily' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      outcome: 'rejected',
      error: { code: 'AUTHORITY_REQUIRED', httpStatus: 403, message: expect.stringContaining('not authorized') },
    });
    expect(refused.body.result).toBeUndefined();
    const list = await read('definition.list.v1', {});
    const ids = (list.body.result as { definitions: Array<{ automationId: string }> }).definitions;
    expect(ids.map((d) => d.automationId)).toEqual(['other']);
    expect((await read('definition.get.v1', { automationId: 'other' })).status).toBe(200);
  });

  test("the owner's token and socket read as the operator", async () => {
    expect(await read('run.history.v1', { automationId: 'daily' }, daemon.token)).toMatchObject({
      status: 200,
      body: { outcome: 'committed' },
    });
    const viaSocket = await owner.handle(command('events.read.v1', { stream: { kind: 'feed', id: 'all' } }));
    expect(viaSocket.outcome).toBe('committed');
  });

  test('the latest-attempt route, outside the command handler, is judged as run.get.v1', async () => {
    const path = `${daemon.url!}/api/v1/runs/${encodeURIComponent(runId)}/latest-attempt`;
    const anonymous = await fetch(path);
    expect(anonymous.status).toBe(403);
    const body = (await anonymous.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('AUTHORITY_REQUIRED');
    expect(body.error.message).toBe(`an unauthenticated caller is not authorized to read run ${runId}`);
    const withToken = await fetch(path, { headers: { authorization: `Bearer ${daemon.token}` } });
    expect(await withToken.json()).toMatchObject({ runId, attemptNumber: 1 });
  });

  test('the doctor on loopback without the token leaves the restricted automation out; the token reads it all', async () => {
    const doctor = async (headers: Record<string, string>) =>
      (await (await fetch(`${daemon.url!}/api/v1/doctor`, { headers })).json()) as { counts: { running: number } };
    expect((await doctor({})).counts.running).toBe(0);
    expect((await doctor({ authorization: `Bearer ${daemon.token}` })).counts.running).toBe(1);
  });
});
