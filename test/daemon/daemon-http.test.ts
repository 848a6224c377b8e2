import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { CAPABILITY_PROFILE } from '../../src/contract/capabilities.js';
import { ERROR_HTTP_STATUS, type ErrorCode } from '../../src/contract/errors.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore, type FileStore } from '../../src/store/open-store.js';
import { DaemonClient, startDaemon, type Daemon } from '../../src/daemon/index.js';
import { daemonRecordPath, tokenPath } from '../../src/daemon/files.js';
import { command, definitionBody } from '../support/commands.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-daemon-http-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let store: FileStore;
let engine: Engine;
let daemon: Daemon;
let url: string;

beforeEach(async () => {
  const file = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  store = await openStore(file);
  engine = createEngine({ store, runtimes: [new SimulatedRuntime()] });
  daemon = await startDaemon({ engine, store, storeFile: store.file, listen: { host: '127.0.0.1', port: 0 } });
  url = daemon.url!;
});
afterEach(async () => {
  await daemon.close();
  await store.close();
});

const feedLength = async () => (await store.read((r) => r.readFeed({ limit: 10_000 }))).length;

async function post(body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/api/v1/actions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A refusal: the contract's envelope with its frozen status, and no stack trace anywhere in it. */
function expectEnvelope(response: { status: number; body: unknown }, code: ErrorCode): void {
  expect(response.body).toMatchObject({ outcome: 'rejected', error: { code, httpStatus: ERROR_HTTP_STATUS[code] } });
  expect(response.status).toBe(ERROR_HTTP_STATUS[code]);
  expect(JSON.stringify(response.body)).not.toMatch(/\n\s+at |node_modules|FST_/);
}

/** Writes raw bytes to the TCP port and reads the whole answer (the server closes after a refusal). */
function rawRequest(bytes: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      resolve({ status: Number(head!.split(' ')[1]), body: JSON.parse(rest.join('\r\n\r\n')) });
    });
    socket.end(bytes);
  });
}

describe('the files beside the store', () => {
  test('socket, token and daemon.json are 0600; close() removes them', async () => {
    for (const path of [daemon.socketPath, tokenPath(store.file), daemonRecordPath(store.file)])
      expect((statSync(path).mode & 0o777).toString(8)).toBe('600');
    expect(statSync(daemon.socketPath).isSocket()).toBe(true);
    expect(readFileSync(tokenPath(store.file), 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(readFileSync(daemonRecordPath(store.file), 'utf8'))).toMatchObject({
      pid: process.pid,
      socketPath: daemon.socketPath,
      url,
    });
    await daemon.close();
    for (const path of [daemon.socketPath, tokenPath(store.file), daemonRecordPath(store.file)])
      expect(existsSync(path)).toBe(false);
  });
});

describe('the trust rule over TCP', () => {
  test('reads pass without the token; a mutation is refused before the engine sees it, its key untouched', async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${url}/api/v1/capabilities`)).json()).toEqual(CAPABILITY_PROFILE);
    const list = await post(JSON.stringify(command('definition.list.v1', {})));
    expect(list).toMatchObject({ status: 200, body: { outcome: 'committed' } });
    const create = JSON.stringify(command('definition.create.v1', { definition: definitionBody('guarded') }));
    const forged: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }];
    forged.push({ authorization: `Basic ${daemon.token}` });
    for (const headers of forged) expectEnvelope(await post(create, headers), 'AUTHORITY_REQUIRED');
    expect(await feedLength()).toBe(0);
    // The same envelope with the token commits as new: the refused attempts left no adoption record behind.
    const committed = await post(create, { authorization: `Bearer ${daemon.token}` });
    expect(committed).toMatchObject({ status: 200, body: { outcome: 'committed' } });
    expect(committed.body.replay).toBeUndefined();
    const again = await fetch(`${url}/api/v1/actions?token=${daemon.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: create,
    });
    expect(await again.json()).toMatchObject({ outcome: 'replayed' });
  });

  test('the changefeed stream needs the token; the Unix socket is trusted without one', async () => {
    expectEnvelope(
      {
        status: (await fetch(`${url}/api/v1/events`)).status,
        body: await (await fetch(`${url}/api/v1/events`)).json(),
      },
      'AUTHORITY_REQUIRED',
    );
    const local = new DaemonClient({ socketPath: daemon.socketPath });
    const created = await local.handle(command('definition.create.v1', { definition: definitionBody('local') }));
    expect(created.outcome).toBe('committed');
    const controller = new AbortController();
    const remote = new DaemonClient({ url, token: daemon.token });
    for await (const { position, event } of remote.events({ after: -1, signal: controller.signal })) {
      expect(position).toBe(0);
      expect(event).toMatchObject({ kind: 'definition.created', automationId: 'local' });
      controller.abort();
    }
  });
});

describe('bad input over HTTP: typed envelopes, nothing written', () => {
  test('malformed JSON, an oversized body, a wrong content type, unknown routes and wrong methods', async () => {
    const token = { authorization: `Bearer ${daemon.token}` };
    expectEnvelope(await post('{"schemaVersion": ', token), 'VALIDATION_FAILED');
    expectEnvelope(await post(`"${'x'.repeat(2 * 1024 * 1024)}"`, token), 'PAYLOAD_TOO_LARGE');
    expectEnvelope(await post('{}', { ...token, 'content-type': 'text/plain' }), 'VALIDATION_FAILED');
    expectEnvelope(await post('[]', token), 'VALIDATION_FAILED');
    expectEnvelope(await post('{"__proto__": {"polluted": true}}', token), 'VALIDATION_FAILED');
    const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
    expectEnvelope(await post(deep, token), 'VALIDATION_FAILED');
    for (const [method, path] of [
      ['GET', '/nowhere'],
      ['GET', '/api/v1/actions'],
      ['DELETE', '/healthz'],
      ['PUT', '/api/v1/capabilities'],
    ] as const) {
      const response = await fetch(`${url}${path}`, { method, headers: token });
      expectEnvelope({ status: response.status, body: await response.json() }, 'NOT_FOUND');
    }
    const badCursor = await fetch(`${url}/api/v1/events?after=soon`, { headers: token });
    expectEnvelope({ status: badCursor.status, body: await badCursor.json() }, 'VALIDATION_FAILED');
    expect(await feedLength()).toBe(0);
  });

  test('hostile headers are answered with envelopes, not dropped connections or default pages', async () => {
    const body = JSON.stringify(command('definition.create.v1', { definition: definitionBody('hostile') }));
    const requests = [
      'GET /healthz HTTP/1.1\r\nHost: x\r\nThis is not a header\r\n\r\n',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`,
      `POST /api/v1/actions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n${body}`,
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Null: a\u0000b\r\n\r\n',
    ];
    const answers = await Promise.all(requests.map(rawRequest));
    expectEnvelope(answers[0]!, 'VALIDATION_FAILED');
    expectEnvelope(answers[1]!, 'PAYLOAD_TOO_LARGE');
    expectEnvelope(answers[2]!, 'VALIDATION_FAILED');
    expectEnvelope(answers[3]!, 'VALIDATION_FAILED');
    const smuggled = await post(body, { authorization: `Bearer ${daemon.token}`, 'x-forwarded-for': '10.0.0.1' });
    expect(smuggled.status).toBe(200);
    expect(await feedLength()).toBe(1);
  });
});
