import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterEach, expect, test } from 'vitest';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { attachInspector, type InspectorRelay } from '../../src/cli/inspect-command.js';
import { committedStates, expectMirrorsHistory, type WireMessage } from './history.js';

/** The `ws` client @statelyai/inspect depends on (no types ship with it; these are the parts used). */
interface Client {
  on(event: 'message', listener: (data: Buffer) => void): void;
  on(event: 'open' | 'close', listener: () => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  terminate(): void;
}
const requireFromInspect = createRequire(createRequire(import.meta.url).resolve('@statelyai/inspect'));
const { WebSocket } = requireFromInspect('ws') as {
  WebSocket: new (url: string, options?: { origin?: string }) => Client;
};

const relays: InspectorRelay[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.terminate();
  await Promise.all(relays.splice(0).map((r) => r.close()));
});

async function until(done: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function viewer(relay: InspectorRelay, origin?: string) {
  const messages: WireMessage[] = [];
  const state = { open: false, closed: false, error: undefined as Error | undefined };
  const client = new WebSocket(relay.url.replace('http:', 'ws:'), origin === undefined ? {} : { origin });
  clients.push(client);
  client.on('open', () => (state.open = true));
  client.on('close', () => (state.closed = true));
  client.on('error', (error) => (state.error = error));
  client.on('message', (data) => messages.push(JSON.parse(data.toString()) as WireMessage));
  return { messages, state };
}

function get(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the relay binds 127.0.0.1 only: a non-loopback address of this machine is refused', async () => {
  const h = await harness({ retention: false });
  const relay = await attachInspector(h.engine, { port: 0 });
  relays.push(relay);
  expect(relay.address.address).toBe('127.0.0.1');
  expect(relay.url).toBe(`http://127.0.0.1:${relay.address.port}`);
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && !i.internal && i.family === 'IPv4');
  if (external === undefined) {
    console.log('no non-loopback IPv4 address on this machine: only the bound address was checked');
    return;
  }
  const refused = await new Promise<string>((resolve) => {
    const socket = connect(relay.address.port, external.address);
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
  expect(refused).toBe('ECONNREFUSED');
});

test("the page points its socket at 127.0.0.1; other hosts and other sites' origins get nothing", async () => {
  const h = await harness({ retention: false });
  const relay = await attachInspector(h.engine, { port: 0 });
  relays.push(relay);
  const page = await get(relay.address.port, `127.0.0.1:${relay.address.port}`);
  expect(page.status).toBe(200);
  expect(page.body).toContain(`new WebSocket('ws://127.0.0.1:${relay.address.port}')`);
  expect((await get(relay.address.port, `attacker.example:${relay.address.port}`)).status).toBe(421);
  const foreign = viewer(relay, 'https://attacker.example');
  await until(() => foreign.state.error !== undefined || foreign.state.closed, 'foreign origin refused');
  expect(foreign.state.open).toBe(false);
  expect(foreign.messages).toEqual([]);
  const own = viewer(relay, `http://127.0.0.1:${relay.address.port}`);
  await until(() => own.messages.length > 0, 'own page served');
});

test('each viewer gets the history replayed, then every commit live, and close() drops them', async () => {
  const h = await harness({ retention: false });
  const relay = await attachInspector(h.engine, { port: 0, pollMs: 50 });
  relays.push(relay);
  h.runtime.enqueue('succeed', 'hang');
  h.clock.set('2026-03-02T09:00:00.000Z');
  await h.engine.tick();
  h.clock.set('2026-03-02T09:02:00.000Z');
  await h.engine.tick();

  const first = viewer(relay);
  await until(() => relay.viewers() === 1, 'viewer connected');
  await relay.caughtUp();
  await until(() => first.messages.length >= 3, 'replay');
  const before = await committedStates(h.store);
  await until(() => first.messages.filter((m) => m.type === '@xstate.snapshot').length === before.order.length, 'all');
  expectMirrorsHistory(first.messages, before);

  // Live: the next slot runs, and an operator cancels it while it runs; the runtime acknowledges.
  h.clock.set('2026-03-03T09:00:00.000Z');
  await h.engine.tick();
  const running = (await h.read.occurrences()).find((o) => o.state === 'running')!;
  const cancel = await h.engine.commands.handle(
    command('occurrence.cancel.v1', { occurrenceId: running.occurrenceId as string }),
  );
  expect(cancel.error?.code).toBe('CANCEL_PENDING');
  h.clock.set('2026-03-03T09:01:00.000Z');
  await h.engine.tick();
  const after = await committedStates(h.store);
  await until(() => first.messages.filter((m) => m.type === '@xstate.snapshot').length === after.order.length, 'live');
  expectMirrorsHistory(first.messages, after);

  // A browser opened late still sees every entity once, from its first state.
  const late = viewer(relay);
  await until(() => late.messages.filter((m) => m.type === '@xstate.snapshot').length === after.order.length, 'late');
  expectMirrorsHistory(late.messages, after);

  await relay.close();
  relays.length = 0;
  await until(() => first.state.closed && late.state.closed, 'viewers dropped');
  expect(relay.viewers()).toBe(0);
});

test('a port already in use is one sentence, and a bad port is refused before anything listens', async () => {
  const h = await harness({ retention: false });
  const relay = await attachInspector(h.engine, { port: 0 });
  relays.push(relay);
  await expect(attachInspector(h.engine, { port: relay.address.port })).rejects.toThrow(
    `inspector relay: port ${relay.address.port} on 127.0.0.1 is in use; pick another with --port`,
  );
  await expect(attachInspector(h.engine, { port: Number('eighty') })).rejects.toThrow(
    '--port: NaN is not a port number (0 to 65535)',
  );
});
