import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { DaemonClient } from '../../src/daemon/index.js';
import { createLimitedServer, resolveLimits, type ConnectionLimits } from '../../src/daemon/connection-limits.js';
import { refuseConnection } from '../../src/daemon/http-errors.js';
import { eventually } from '../support/eventually.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * CI sizes, or (COVEN_STRESS=1) thousands. The daemon's open-file limit is small, so that in CI a few hundred
 * idle connections exhaust an unbounded daemon as ~20,000 exhaust one with the default limit of 20,000.
 */
const STRESS = process.env.COVEN_STRESS === '1';
const SIZE = STRESS
  ? { idle: 6_000, slow: 400, idleBeside: 500, cap: 1_024, nofile: 4_096 }
  : { idle: 600, slow: 40, idleBeside: 60, cap: 128, nofile: 512 };
/** How long the owner's socket and a fresh TCP client may take to be answered under the flood. */
const ANSWERED_WITHIN_MS = 5_000;

const children: ChildProcess[] = [];
const held: Socket[] = [];
afterEach(async () => {
  for (const socket of held.splice(0)) socket.destroy();
  await Promise.all(
    children.splice(0).map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGKILL');
        }),
    ),
  );
});

interface Served {
  socketPath: string;
  port: number;
  /** The daemon's open files right after it started serving. */
  baseFds: number;
  /** Its open files now (Linux /proc). */
  fds: () => number;
}

/** limited-daemon.ts in its own process, with `ulimit -n` at the size's limit and these connection limits. */
async function limitedDaemon(limits: Partial<ConnectionLimits>): Promise<Served> {
  const child = spawn(
    'sh',
    ['-c', `ulimit -n ${SIZE.nofile} && exec "$0" --import tsx test/daemon/limited-daemon.ts`, process.execPath],
    {
      cwd: root,
      env: { ...process.env, COVEN_TEST_LIMITS: JSON.stringify(limits) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const line = await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`the daemon exited: ${out}`);
    return /^\{.*\}$/m.exec(out)?.[0];
  }, 30_000);
  const { socketPath, url } = JSON.parse(line) as { socketPath: string; url: string };
  const fds = () => readdirSync(`/proc/${child.pid!}/fd`).length;
  return { socketPath, port: Number(new URL(url).port), baseFds: fds(), fds };
}

interface Attacker {
  socket: Socket;
  openedAt: number;
  closedAt?: number;
  answer: string;
  settled: Promise<void>;
}

/** One attacking connection: it connects, sends `first` (nothing for an idle one), then `drip` every 100 ms. */
function attack(port: number, first?: string, drip?: string): Attacker {
  const socket = connect(port, '127.0.0.1');
  held.push(socket);
  const attacker: Attacker = { socket, openedAt: Date.now(), answer: '', settled: Promise.resolve() };
  let timer: NodeJS.Timeout | undefined;
  attacker.settled = new Promise<void>((done) => {
    socket.once('connect', () => {
      if (first !== undefined) socket.write(first);
      if (drip !== undefined) timer = setInterval(() => socket.writable && socket.write(drip), 100);
      done();
    });
    socket.once('close', () => done());
  });
  socket.on('data', (chunk: Buffer) => (attacker.answer += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  socket.once('close', () => {
    clearInterval(timer);
    attacker.closedAt = Date.now();
  });
  return attacker;
}

/** A request on a connection of its own (no agent), answered within the deadline; resolves with its latency. */
function freshTcpHealth(port: number): Promise<number> {
  const started = Date.now();
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res: IncomingMessage) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? done(Date.now() - started) : fail(new Error(`${res.statusCode}`))));
    });
    req.setTimeout(ANSWERED_WITHIN_MS, () => req.destroy(new Error(`no answer within ${ANSWERED_WITHIN_MS} ms`)));
    req.on('error', fail);
    req.end();
  });
}

async function socketHealth(socketPath: string): Promise<number> {
  const started = Date.now();
  await new DaemonClient({ socketPath }).get('/healthz', ANSWERED_WITHIN_MS);
  return Date.now() - started;
}

/** Both the owner's socket and a fresh TCP client are answered, three times each; prints the latencies. */
async function expectBothAnswered(served: Served, what: string): Promise<void> {
  const latencies = { socket: [] as number[], tcp: [] as number[] };
  for (let i = 0; i < 3; i++) {
    latencies.socket.push(await socketHealth(served.socketPath));
    latencies.tcp.push(await freshTcpHealth(served.port));
  }
  console.log(
    `${what}: healthz answered in ms: socket ${latencies.socket.join(', ')}; fresh TCP ${latencies.tcp.join(', ')}`,
  );
}

describe(`connection exhaustion (${STRESS ? 'stress' : 'CI'} size: ${JSON.stringify(SIZE)})`, () => {
  test('idle TCP connections beyond the cap shed the oldest; the socket and a fresh TCP client are answered', async () => {
    const served = await limitedDaemon({
      maxConnections: SIZE.cap,
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
    });
    const idle = Array.from({ length: SIZE.idle }, () => attack(served.port));
    await Promise.all(idle.map((a) => a.settled));
    await expectBothAnswered(served, `${SIZE.idle} idle TCP connections`);
    // Long before any deadline could close one, the cap holds the daemon's connections, so its open files, bounded.
    const bounded = await eventually(async () =>
      served.fds() <= served.baseFds + SIZE.cap + 2 ? served.fds() : undefined,
    );
    console.log(`the daemon holds ${bounded} open files (${served.baseFds} before the flood, cap ${SIZE.cap})`);
    expect(idle.filter((a) => a.closedAt !== undefined).length).toBeGreaterThan(0);
  }, 120_000);

  // Below the cap, so no slow body is shed (the test above sheds): each one meets the request deadline.
  test('slow bodies are cut after requestTimeoutMs with DEADLINE_EXCEEDED, while both listeners keep answering', async () => {
    const limits = { maxConnections: SIZE.cap, headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 };
    const served = await limitedDaemon(limits);
    const idle = Array.from({ length: SIZE.idleBeside }, () => attack(served.port));
    const head = `POST /api/v1/actions HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;
    const slow = Array.from({ length: SIZE.slow }, () => attack(served.port, head, ' '));
    await Promise.all([...idle, ...slow].map((a) => a.settled));
    await expectBothAnswered(served, `${SIZE.idleBeside} idle and ${SIZE.slow} slow-body TCP connections`);
    await eventually(async () => (slow.every((a) => a.closedAt !== undefined) ? true : undefined), 30_000);
    const heldMs = slow.map((a) => a.closedAt! - a.openedAt);
    console.log(
      `slow bodies held ${Math.min(...heldMs)}–${Math.max(...heldMs)} ms (requestTimeoutMs ${limits.requestTimeoutMs})`,
    );
    for (const a of slow) {
      expect(a.answer).toMatch(/^HTTP\/1\.1 504 /);
      expect(a.answer).toContain('"code":"DEADLINE_EXCEEDED"');
      expect(a.closedAt! - a.openedAt).toBeGreaterThanOrEqual(limits.requestTimeoutMs - 100);
    }
    expect(Math.max(...heldMs)).toBeLessThan(limits.requestTimeoutMs + 15_000);
  }, 120_000);

  test('when every place is being served, a newcomer is answered CONCURRENCY_LIMIT (429) and closed', async () => {
    const pending: ServerResponse[] = [];
    const server = createLimitedServer(
      (request, response) => {
        request.resume();
        request.on('end', () => pending.push(response));
      },
      resolveLimits({ maxConnections: 2 }),
      refuseConnection,
    );
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as { port: number };
    try {
      const get = `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
      const busy = [attack(port, get), attack(port, get)];
      await eventually(async () => (pending.length === 2 ? true : undefined));
      const newcomer = attack(port, get);
      await eventually(async () => (newcomer.closedAt !== undefined ? true : undefined));
      expect(newcomer.answer).toMatch(/^HTTP\/1\.1 429 /);
      expect(newcomer.answer).toContain('"code":"CONCURRENCY_LIMIT"');
      expect(newcomer.answer).toContain('"retryable":true');
      expect(busy.every((a) => a.closedAt === undefined)).toBe(true);
    } finally {
      for (const response of pending) response.end();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    }
  });
});
