import { chmodSync, chownSync, lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { daemonRecordPath, socketPathFor, tokenPath } from '../../src/daemon/files.js';
import { ownershipProblem, proofOf, socketToTrust } from '../../src/daemon/daemon-proof.js';
import { openStore } from '../../src/store/open-store.js';
import { runCli } from '../support/run-cli.js';
import { killChildren, runCliProcess, writeDefinition } from './daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-socket-trust-'));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The prompt the applied definition carries (cli-fixtures' definitionFile): it must never reach a fake. */
const PROMPT = 'a job';

const fakes: Server[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => new Promise((done) => fake.close(done))));
});

/**
 * What a killed daemon leaves beside its store (daemon.json and a 0600 token), with another listener at the
 * socket path it names: one that answers every request 200 with this store's path and a proof made under a
 * token it guessed. Resolves with what it received, read when the test asks.
 */
async function squattedStore(mode: number): Promise<{ store: string; folder: string; received: () => string }> {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  const socketPath = socketPathFor(store);
  await (await openStore(store)).close();
  writeFileSync(daemonRecordPath(store), JSON.stringify({ pid: 1, socketPath, startedAt: new Date().toISOString() }));
  writeFileSync(tokenPath(store), `${'1'.repeat(64)}\n`, { mode: 0o600 });
  let received = '';
  const fake = createServer((socket) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      const nonce = /nonce=([0-9a-f]{64})/.exec(received)?.[1] ?? '';
      const body = JSON.stringify({ status: 'ok', storeFile: store, proof: proofOf('2'.repeat(64), store, nonce) });
      socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    });
  });
  fakes.push(fake);
  await new Promise<void>((done) => fake.listen(socketPath, done));
  chmodSync(socketPath, mode);
  return { store, folder, received: () => received };
}

describe('the CLI speaks only to a daemon proven to own the store', () => {
  test('a socket with mode 0666 is refused before it is connected to: one line, exit 1, nothing sent', async () => {
    const { store, folder, received } = await squattedStore(0o666);
    const run = await runCliProcess(['--store', store, 'apply', '-f', writeDefinition(folder, 'nightly')]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^AUTHORITY_REQUIRED \(403\): refusing the daemon socket .* its mode is 0666, not 0600;/,
    );
    expect(received()).toBe('');
  }, 60_000);

  test('a 0600 socket whose listener cannot prove it holds the token gets the nonce only, never a command', async () => {
    const { store, folder, received } = await squattedStore(0o600);
    const run = await runCliProcess(['--store', store, 'apply', '-f', writeDefinition(folder, 'nightly')]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^AUTHORITY_REQUIRED \(403\): .* it did not prove it holds the store's token;/);
    expect(received()).toMatch(/^GET \/api\/v1\/daemon-proof\?nonce=[0-9a-f]{64} HTTP\/1\.1\r\n/);
    expect(received()).not.toContain('POST');
    expect(received()).not.toContain(PROMPT);
    // A read is refused alike: the CLI never falls back to reading through a listener it could not trust.
    const list = await runCli('--store', store, 'list');
    expect(list).toMatchObject({ code: 1, out: '' });
    expect(list.err).toMatch(/did not prove/);
  }, 60_000);

  test.runIf(process.getuid?.() === 0)(
    '(as root) a socket owned by another user is refused',
    async () => {
      const { store, folder, received } = await squattedStore(0o600);
      chownSync(socketPathFor(store), 65_534, 65_534);
      const run = await runCliProcess(['--store', store, 'apply', '-f', writeDefinition(folder, 'nightly')]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/refusing the daemon socket .* it belongs to uid 65534, not uid 0;/);
      expect(received()).toBe('');
    },
    60_000,
  );

  test('the owner check: a socket or token file of another uid, or not private, is named with its problem', async () => {
    if (process.getuid?.() !== 0)
      console.log('the end-to-end uid test runs as root only (chown); this one runs anywhere');
    const { store } = await squattedStore(0o600);
    const socket = lstatSync(socketPathFor(store));
    expect(ownershipProblem(socket, 'socket', socket.uid)).toBeUndefined();
    expect(ownershipProblem(socket, 'socket', socket.uid + 1)).toBe(
      `it belongs to uid ${socket.uid}, not uid ${socket.uid + 1}`,
    );
    expect(ownershipProblem(socket, 'file', socket.uid)).toBe('it is not a file');
    // A non-root user: the token file must be its own.
    expect(() => socketToTrust(store, socketPathFor(store), socket.uid + 1)).toThrow(/token file .* belongs to uid/);
    chmodSync(tokenPath(store), 0o644);
    expect(() => socketToTrust(store, socketPathFor(store), socket.uid)).toThrow(/its mode is 0644, not 0600/);
    rmSync(tokenPath(store));
    expect(() => socketToTrust(store, socketPathFor(store), socket.uid)).toThrow(/there is no token file/);
    rmSync(socketPathFor(store));
    expect(socketToTrust(store, socketPathFor(store), socket.uid)).toBeUndefined();
  });
});
