import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
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
const [port, marker, text] = process.argv.slice(1);
const socket = connect(Number(port), '127.0.0.1', () => socket.write(text, () => writeFileSync(marker, '')));
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

/** What the server answers `text`, sent while the server's loop was held from the connection's acceptance. */
async function answeredAfterHeldLoop(text: string): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'coven-held-loop-'));
  folders.push(folder);
  const marker = join(folder, 'written');
  const server = createLimitedServer(
    (request, response) => request.resume().once('end', () => response.end('served')),
    LIMITS,
    refuseConnection,
  );
  server.on('clientError', answerClientError);
  server.once('connection', () => holdLoopUntil(marker));
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  const client = spawn(process.execPath, ['-e', CLIENT, String(port), marker, text], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let answer = '';
  client.stdout.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
  await new Promise((done) => client.once('close', done));
  return answer;
}

describe('a listener whose loop was held judges the daemon late, not the client', () => {
  test('a whole request that waited in the socket while the loop was held is served', async () => {
    const answer = await answeredAfterHeldLoop('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('served');
  });

  test('a connection that sent nothing is still refused DEADLINE_EXCEEDED', async () => {
    const answer = await answeredAfterHeldLoop('');
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(answer).toContain('"code":"DEADLINE_EXCEEDED"');
  });

  test('headers begun and never finished are still refused DEADLINE_EXCEEDED after the second chance', async () => {
    const answer = await answeredAfterHeldLoop('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(answer).toContain('"code":"DEADLINE_EXCEEDED"');
  });

  test('a body promised and never sent is still refused DEADLINE_EXCEEDED after the second chance', async () => {
    const answer = await answeredAfterHeldLoop(
      'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nabc',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 504 /);
    expect(answer).toContain('"code":"DEADLINE_EXCEEDED"');
  });
});
