import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, expect, test } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { StoreReadOnlyError } from '../../src/store/store.js';

// Store files hold prompts and runtime output: 0600 files and 0700 folders whatever the umask, here the
// common 022 that left them world-readable.

const dir = mkdtempSync(join(tmpdir(), 'coven-private-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
let umask = 0;
beforeEach(() => {
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
});

const modeOf = (path: string) => statSync(path).mode & 0o777;
/** The modes of the store's own files in its folder (the lock's files are another part's). */
const storeFileModes = (folder: string) =>
  Object.fromEntries(
    readdirSync(folder)
      .filter((name) => !/\.(lock|owner)$/.test(name))
      .map((name) => [name, modeOf(join(folder, name))]),
  );

test('a JSON store under umask 022 creates its folders 0700 and its snapshot, journal and temp files 0600, before and after folds', async () => {
  const base = join(dir, `json-${counter++}`);
  const file = join(base, '.coven', 'nested', 'automations.json');
  const tempModes: number[] = [];
  const store = await JsonFileStore.open(file, {
    compactAtBytes: 1,
    files: {
      rename: async (from, to) => {
        tempModes.push(
          modeOf(
            join(
              base,
              '.coven',
              'nested',
              readdirSync(join(base, '.coven', 'nested')).find((n) => n.endsWith('.tmp'))!,
            ),
          ),
        );
        await rename(from, to);
      },
    },
  });
  expect([modeOf(base), modeOf(join(base, '.coven')), modeOf(join(base, '.coven', 'nested'))]).toEqual([
    0o700, 0o700, 0o700,
  ]);
  await store.transact((tx) =>
    tx.put('definition', 'daily-notes', { prompt: 'Write the daily reflection.' }, { expectedVersion: null }),
  );
  await store.foldSettled();
  expect(storeFileModes(join(base, '.coven', 'nested'))).toEqual({
    'automations.json': 0o600,
    'automations.json.journal': 0o600,
  });
  await store.close();
  expect(tempModes.length).toBeGreaterThan(0);
  expect(new Set(tempModes)).toEqual(new Set([0o600]));
  expect(storeFileModes(join(base, '.coven', 'nested'))).toEqual({
    'automations.json': 0o600,
    'automations.json.journal': 0o600,
  });
});

test('a JSON store made before, with 0644 files, is private again: its journal at open, its snapshot at the next fold', async () => {
  const file = join(dir, `json-${counter++}.json`);
  await (await JsonFileStore.open(file)).close();
  chmodSync(file, 0o644);
  chmodSync(`${file}.journal`, 0o644);
  const store = await JsonFileStore.open(file);
  expect(modeOf(`${file}.journal`)).toBe(0o600);
  await store.transact((tx) => tx.put('k', 'a', {}, { expectedVersion: null }));
  await store.close();
  expect([modeOf(file), modeOf(`${file}.journal`)]).toEqual([0o600, 0o600]);
});

test('a SQLite store under umask 022 creates its folder 0700 and its database, -wal, -shm and commit watermark 0600; an older 0644 file is made private at open', async () => {
  const folder = join(dir, `sqlite-${counter++}`, '.coven');
  const file = join(folder, 'automations.sqlite');
  const store = await SqliteStore.open(file);
  await store.transact((tx) =>
    tx.put('definition', 'daily-notes', { prompt: 'Write the daily reflection.' }, { expectedVersion: null }),
  );
  expect(modeOf(folder)).toBe(0o700);
  expect(modeOf(join(folder, '..'))).toBe(0o700);
  expect(storeFileModes(folder)).toEqual({
    'automations.sqlite': 0o600,
    'automations.sqlite-shm': 0o600,
    'automations.sqlite-wal': 0o600,
    'automations.sqlite.commits': 0o600,
  });
  await store.close();
  chmodSync(file, 0o644);
  const reopened = await SqliteStore.open(file);
  await reopened.transact((tx) => tx.put('k', 'a', {}, { expectedVersion: null }));
  expect(storeFileModes(folder)).toEqual({
    'automations.sqlite': 0o600,
    'automations.sqlite-shm': 0o600,
    'automations.sqlite-wal': 0o600,
    'automations.sqlite.commits': 0o600,
  });
  await reopened.close();
});

test.each([
  ['0400', 0o400],
  ['0444', 0o444],
])(
  'a JSON snapshot made read-only (%s) is never replaced by a fold: the store refuses to open, naming the file',
  async (_, mode) => {
    const file = join(dir, `json-${counter++}.json`);
    const store = await JsonFileStore.open(file);
    await store.transact((tx) =>
      tx.put('definition', 'daily-notes', { prompt: 'Write the daily reflection.' }, { expectedVersion: null }),
    );
    await store.close();
    chmodSync(file, mode);
    const bytes = readFileSync(file);
    const journal = readFileSync(`${file}.journal`);
    try {
      const error = await JsonFileStore.open(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreReadOnlyError);
      expect((error as StoreReadOnlyError).toEnvelope()).toMatchObject({
        code: 'AUTHORITY_REQUIRED',
        httpStatus: 403,
        retryable: false,
      });
      expect((error as Error).message).toContain(`store file ${file} is not writable`);
      expect([readFileSync(file).equals(bytes), readFileSync(`${file}.journal`).equals(journal), modeOf(file)]).toEqual(
        [true, true, mode],
      );
      // A read-only journal is refused the same way.
      chmodSync(file, 0o600);
      chmodSync(`${file}.journal`, mode);
      await expect(JsonFileStore.open(file)).rejects.toThrow(`store file ${file}.journal is not writable`);
    } finally {
      chmodSync(file, 0o600);
      if (existsSync(`${file}.journal`)) chmodSync(`${file}.journal`, 0o600);
    }
    // Made writable again, it opens (the refusals released the lock).
    await (await JsonFileStore.open(file)).close();
  },
);
