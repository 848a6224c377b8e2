import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { afterAll, afterEach, expect, test } from 'vitest';
import { storeLocation } from '../../src/cli/store-location.js';
import { DaemonClient } from '../../src/daemon/index.js';
import { killChildren, runCliProcess, startDaemonProcess } from '../daemon/daemon-process.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition, definitionFile } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killChildren);

test('--store with an unknown extension is refused with one typed line before anything is created', async () => {
  const folder = join(dir, 'never-made');
  for (const [name, shown] of [
    ['store.txt', 'unknown extension .txt'],
    ['store', 'no file extension'],
  ] as const) {
    const store = join(folder, name);
    for (const args of [['list'], ['init'], ['apply', '-f', definitionFile(dir, 'x')], ['start']]) {
      const run = await runCli('--store', store, ...args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.err).toBe(
        `VALIDATION_FAILED (400): --store ${store}: ${shown}; use .json (JSON store), .sqlite, .sqlite3 or .db ` +
          '(SQLite), a postgres:// URL, or name the kind with --store-kind',
      );
    }
  }
  const json = JSON.parse((await runCli('--store', join(folder, 'a.yaml'), '--json', 'init')).out) as object;
  expect(json).toMatchObject({
    outcome: 'rejected',
    error: { code: 'VALIDATION_FAILED', details: { field: '--store' } },
  });
  expect(existsSync(folder)).toBe(false);
  // Naming the kind takes any name.
  const named = join(dir, 'named', 'store.data');
  expect(await runCli('--store', named, '--store-kind', 'json', 'init')).toMatchObject({ code: 0 });
  expect((await runCli('--store', named, '--store-kind', 'json', 'list')).code).toBe(0);
});

test('a read against a missing store file is refused (no such store) and creates nothing', async () => {
  const folder = join(dir, 'missing');
  const store = join(folder, 'automations.json');
  for (const args of [
    ['list'],
    ['get', 'x'],
    ['history', 'x'],
    ['health', 'x'],
    ['events'],
    ['occurrences'],
    ['occurrence', 'occ-x'],
    ['receipt', 'run-x'],
    ['next', 'x'],
  ]) {
    const run = await runCli('--store', store, ...args);
    expect(run, args.join(' ')).toMatchObject({
      code: 1,
      err: `NOT_FOUND (404): no such store: ${store} (${args[0]} reads a store and never creates one; run init or apply first)`,
    });
  }
  expect(existsSync(folder)).toBe(false);
  // A write still creates the store it is pointed at, and reads then answer.
  mkdirSync(folder);
  await activeDefinition(store, folder, 'nightly');
  expect((await runCli('--store', store, 'list')).code).toBe(0);
});

test('postgres:// and postgresql:// select PostgreSQL; a file store kind with one is refused', async () => {
  expect(storeLocation({ store: 'postgres://coven:secret@db.internal/automations' })).toMatchObject({
    kind: 'postgres',
    shown: 'postgres://coven:***@db.internal/automations',
    folder: resolve('.coven'),
  });
  expect(storeLocation({ store: 'postgresql://db.internal/a' }).kind).toBe('postgres');
  const refused = await runCli('--store', 'postgres://coven:secret@db.internal/a', '--store-kind', 'sqlite', 'list');
  expect(refused).toMatchObject({
    code: 1,
    err:
      'VALIDATION_FAILED (400): --store-kind sqlite names a file store, ' +
      'but --store postgres://coven:***@db.internal/a is a PostgreSQL database',
  });
  expect(existsSync('postgres:')).toBe(false);
});

describePostgres('the CLI on a PostgreSQL store', (socketDir) => {
  test('apply, activate, list, next, occurrences and get run against the database, not a folder named postgres:', async () => {
    const url = await freshDatabase(socketDir, 'cli_store');
    const folder = mkdtempSync(join(dir, 'pg-'));
    // A database has no folder: sessions would run in ./.coven, so the definition's folder is named a root.
    const cli = (...args: string[]) => runCli('--store', url, '--cwd-root', folder, ...args);
    expect(await cli('init')).toMatchObject({ code: 0, out: expect.stringMatching(/^store ready: postgresql:\/\//) });
    expect((await cli('apply', '-f', definitionFile(folder, 'nightly'))).code).toBe(0);
    expect((await cli('activate', 'nightly')).out).toBe('nightly: active (revision 3)');
    expect((await cli('list')).out).toMatch(/\nnightly\s+Job nightly\s+active\s+3\s+20\d\d-\S+Z\s+-/);
    expect((await cli('next', 'nightly', '--count', '2')).out.split('\n')).toHaveLength(3);
    expect((await cli('occurrences')).out).toBe('no occurrences in view all');
    expect((await cli('--json', 'get', 'nightly')).out).toContain('"lifecycleState": "active"');
    expect(existsSync('postgres:') || existsSync('postgresql:')).toBe(false);
  }, 60_000);

  test('start serves a database; a CLI in the same folder finds that daemon by the connection string', async () => {
    const url = await freshDatabase(socketDir, 'cli_daemon');
    const folder = mkdtempSync(join(dir, 'pg-'));
    // Daemon and CLI run in the temporary folder: the daemon's socket goes to its `.coven`, not the checkout's.
    const daemon = await startDaemonProcess(url, ['--cwd-root', folder], folder);
    // The anchor as a CLI in `folder` computes it (storeLocation resolves `.coven` against the current folder).
    const anchor = join(folder, '.coven', basename(storeLocation({ store: url }).anchor));
    try {
      expect(daemon.stdout()).toMatch(/^engine running on postgresql:\/\/postgres@/m);
      expect(await DaemonClient.connect(anchor)).toBeInstanceOf(DaemonClient);
      const applied = await runCliProcess(['--store', url, 'apply', '-f', definitionFile(folder, 'nightly')], folder);
      expect(applied, applied.stderr).toMatchObject({ code: 0 });
      expect((await runCliProcess(['--store', url, 'list'], folder)).stdout).toMatch(
        /\nnightly\s+Job nightly\s+paused\s+2/,
      );
      const second = await runCliProcess(['--store', url, 'start'], folder);
      expect(second).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^a daemon \(process \d+\) already serves /),
      });
    } finally {
      daemon.child.kill('SIGINT');
      expect(await daemon.exited).toBe(0);
    }
    expect(await DaemonClient.connect(anchor)).toBeUndefined();
  }, 90_000);
});
