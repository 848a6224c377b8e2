import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { lockFilePath } from '../../src/store/file-lock.js';
import { openStore, type FileStoreKind } from '../../src/store/open-store.js';
import { StoreClosedError, StoreLockedError } from '../../src/store/store.js';
import { buildContender, Contender, processState, race } from './lock-contenders.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-file-lock-'));
let contender: Awaited<ReturnType<typeof buildContender>> | undefined;
beforeAll(async () => {
  contender = await buildContender();
}, 60_000);
afterAll(() => {
  contender?.dispose();
  rmSync(dir, { recursive: true, force: true });
});
let counter = 0;
const freshFile = (kind: FileStoreKind) => join(dir, `store-${counter++}.${kind === 'json' ? 'json' : 'sqlite'}`);

/** A contender process that has opened `file` and committed in it. */
async function holder(
  file: string,
  kind: FileStoreKind,
  options: { underNonReapingParent?: boolean } = {},
): Promise<Contender> {
  const started = await Contender.start(contender!.script, options);
  const outcome = await race([started], file, kind, counter++, [0], 0);
  expect(outcome.winners).toEqual([started.pid]);
  return started;
}

async function opensAndHolds(file: string, kind: FileStoreKind): Promise<string[]> {
  const store = await openStore(file, kind);
  try {
    return (await store.read((r) => r.list('lock-round'))).map((record) => record.id);
  } finally {
    await store.close();
  }
}

function withUmask<T>(mask: number, body: () => Promise<T>): Promise<T> {
  const before = process.umask(mask);
  return body().finally(() => process.umask(before));
}

const mode = (path: string) => statSync(path).mode & 0o777;

describe.each(['json', 'sqlite'] as const)('%s store lock', (kind) => {
  test('a second process is refused with StoreLockedError naming the live holder: pid, host and since', async () => {
    const file = freshFile(kind);
    const held = await holder(file, kind);
    try {
      const error = await openStore(file, kind).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreLockedError);
      const named = /in use by process (\d+) on (\S+) since (\S+)$/.exec((error as Error).message);
      expect(named?.slice(1, 3)).toEqual([String(held.pid), hostname()]);
      expect(Math.abs(Date.now() - Date.parse(named![3]!))).toBeLessThan(120_000);
    } finally {
      await held.kill();
    }
  });

  test('once the holder is SIGKILLed the next open succeeds at once, with every commit', async () => {
    const file = freshFile(kind);
    const held = await holder(file, kind);
    await held.kill();
    expect(await opensAndHolds(file, kind)).toHaveLength(1);
  });

  test('a holder killed but never reaped (a zombie) holds nothing', async () => {
    const file = freshFile(kind);
    const held = await holder(file, kind, { underNonReapingParent: true });
    try {
      await held.killLeavingZombie();
      expect(processState(held.pid)).toBe('Z');
      expect(() => process.kill(held.pid, 0)).not.toThrow();
      expect(await opensAndHolds(file, kind)).toHaveLength(1);
    } finally {
      await held.kill();
    }
  });

  test('a child the holder started (as a session would be) does not keep the lock after the holder dies', async () => {
    const file = freshFile(kind);
    const held = await holder(file, kind);
    const sleeper = await held.spawnSleeper();
    try {
      await held.kill();
      expect(processState(sleeper)).toBeDefined();
      expect(await opensAndHolds(file, kind)).toHaveLength(1);
    } finally {
      process.kill(sleeper, 'SIGKILL');
    }
  });

  test('the lock file is 0600 whatever the umask, and names nobody once the store is closed', async () => {
    for (const mask of [0o022, 0o277]) {
      const file = freshFile(kind);
      await withUmask(mask, async () => {
        const store = await openStore(file, kind);
        expect(mode(lockFilePath(file))).toBe(0o600);
        expect(JSON.parse(readFileSync(lockFilePath(file), 'utf8'))).toMatchObject({
          pid: process.pid,
          hostname: hostname(),
        });
        await store.close();
      });
      expect(mode(lockFilePath(file))).toBe(0o600);
      expect(statSync(lockFilePath(file)).size).toBe(0);
    }
  });

  test("a store from before the kernel lock opens: proper-lockfile's stale directory is removed, its owner file taken over", async () => {
    const file = freshFile(kind);
    await (await openStore(file, kind)).close();
    mkdirSync(`${file}.lock`);
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, longAgo, longAgo);
    writeFileSync(
      lockFilePath(file),
      JSON.stringify({ pid: 999_999, hostname: hostname(), acquiredAt: longAgo.toISOString() }),
      { mode: 0o644 },
    );
    const store = await openStore(file, kind);
    try {
      expect(() => statSync(`${file}.lock`)).toThrow(/ENOENT/);
      expect(mode(lockFilePath(file))).toBe(0o600);
      expect(JSON.parse(readFileSync(lockFilePath(file), 'utf8'))).toMatchObject({ pid: process.pid });
    } finally {
      await store.close();
    }
  });

  test('a fresh proper-lockfile directory (an older engine may be live) refuses the store and names that owner', async () => {
    const file = freshFile(kind);
    mkdirSync(`${file}.lock`);
    writeFileSync(
      lockFilePath(file),
      JSON.stringify({ pid: 4242, hostname: 'old-host', acquiredAt: '2026-01-01T00:00:00.000Z' }),
    );
    const error = await openStore(file, kind).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreLockedError);
    expect((error as Error).message).toContain(
      'in use by process 4242 on old-host since 2026-01-01T00:00:00.000Z (the lock of an engine older than this one',
    );
    expect(statSync(`${file}.lock`).isDirectory()).toBe(true);
  });

  test('a holder whose lock file was removed stops committing: another opener could now start', async () => {
    const file = freshFile(kind);
    const store = await openStore(file, kind);
    try {
      rmSync(lockFilePath(file));
      const error = await store
        .transact((tx) => tx.put('lock-round', 'late', {}, { expectedVersion: null }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreClosedError);
      expect((error as Error).message).toContain('was removed or replaced');
    } finally {
      await store.close();
    }
    expect(await opensAndHolds(file, kind)).toEqual([]);
  });
});
