import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createLimitedServer, resolveLimits } from '../../src/daemon/connection-limits.js';
import { answerClientError, refuseConnection } from '../../src/daemon/http-errors.js';

/** Short deadlines, so that a held loop outlasts them. */
const LIMITS = resolveLimits({ headersTimeoutMs: 100, requestTimeoutMs: 200 });

/**
 * A client in its own process (the server's held loop cannot hold it): connects, sends `text`, then creates
 * `marker` once the bytes are in the socket; prints what the server answers.
 */
const CLIENT = `
const { connect } = require('node:net');
const { writeFileSync } = require('node:fs');
const [port, marker, text, trickle] = process.argv.slice(1);
const socket = connect(Number(port), '127.0.0.1', () => {
  socket.write(text, () => writeFileSync(marker, ''));
  if (trickle !== 'trickle') return;
  const timer = setInterval(() => socket.writable && socket.write('X-Slow: 1\\r\\n'), 5);
  socket.on('close', () => clearInterval(timer));
});
let answer = '';
socket.on('data', (chunk) => (answer += chunk));
socket.on('error', () => undefined);
socket.on('close', () => process.stdout.write(answer));
`;

/**
 * Holds the event loop, as a launch's fork on a loaded machine does, from the moment the connection is accepted
 * until the client's bytes wait in the socket and the listener's header deadline has passed.
 */
function holdLoopUntil(marker: string): void {
  const giveUpAt = Date.now() + 20_000;
  while (!existsSync(marker))
    if (Date.now() > giveUpAt) throw new Error(`the client never wrote (${marker} absent after 20 s)`);
  const until = Date.now() + LIMITS.headersTimeoutMs + 100;
  while (Date.now() < until);
}

const servers: Server[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

interface HeldLoopCase {
  /** The client's first bytes. */
  text: string;
  /** The client goes on sending a header line every 5 ms. */
  trickle?: boolean;
  /** The loop is held once the server has read the client's first bytes, not from the acceptance. */
  holdAfterRead?: boolean;
  requestTimeoutMs?: number;
}

/**
 * What the server answers, sent while the server's loop was held from the connection's acceptance (or from its
 * first read), and how long after the hold ended the server closed the connection.
 */
async function answeredAfterHeldLoop(given: HeldLoopCase): Promise<{ answer: string; closedAfterHoldMs: number }> {
  const folder = mkdtempSync(join(tmpdir(), 'coven-held-loop-'));
  folders.push(folder);
  const marker = join(folder, 'written');
  const limits = { ...LIMITS, requestTimeoutMs: given.requestTimeoutMs ?? LIMITS.requestTimeoutMs };
  const server = createLimitedServer(
    (request, response) => request.resume().once('end', () => response.end('served')),
    limits,
    refuseConnection,
  );
  server.on('clientError', answerClientError);
  let heldUntil = 0;
  let closedAt = 0;
  server.once('connection', (socket: Socket) => {
    socket.once('close', () => (closedAt = performance.now()));
    const hold = () => {
      holdLoopUntil(marker);
      heldUntil = performance.now();
    };
    if (given.holdAfterRead !== true) return hold();
    const afterRead = () => (socket.bytesRead > 0 ? hold() : setImmediate(afterRead));
    afterRead();
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  const args = ['-e', CLIENT, String(port), marker, given.text, given.trickle === true ? 'trickle' : ''];
  const client = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let answer = '';
  client.stdout.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
  await new Promise((done) => client.once('close', done));
  return { answer, closedAfterHoldMs: closedAt - heldUntil };
}

describe('a listener whose loop was held judges the daemon late, not the client', () => {
  test('a whole request that waited in the socket while the loop was held is served', async () => {
    const { answer } = await answeredAfterHeldLoop({
      text: 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('served');
  });

  test.each([
    ['a connection that sent nothing', ''],
    ['headers begun and never finished', 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n'],
    [
      'a body promised and never sent',
      'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nabc',
    ],
  ])('%s: still refused DEADLINE_EXCEEDED', async (_, text) => {
    const { answer } = await answeredAfterHeldLoop({ text });
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(answer).toContain('"code":"DEADLINE_EXCEEDED"');
  });

  test('blank lines that begin no request are refused after one request window', async () => {
    const { answer, closedAfterHoldMs } = await answeredAfterHeldLoop({ text: '\r\n\r\n' });
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(closedAfterHoldMs).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs);
  });

  test('a sender read before the loop was held and still trickling is refused at its first deadline', async () => {
    // A reprieve would hold it for one more request window (10 s here): refused well before, it got none.
    const { answer, closedAfterHoldMs } = await answeredAfterHeldLoop({
      text: 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n',
      trickle: true,
      holdAfterRead: true,
      requestTimeoutMs: 10_000,
    });
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(closedAfterHoldMs).toBeLessThan(5_000);
  });
});
