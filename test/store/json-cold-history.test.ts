import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { JsonFileStore, type JsonFileStoreOptions } from '../../src/store/json-file-store.js';
import { StoreCorruptError, type Store } from '../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-json-cold-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

/** Overwrites `from` with `to` (same byte length) in the file, where the store left it. */
function patchInPlace(file: string, from: string, to: string): void {
  expect(Buffer.byteLength(to)).toBe(Buffer.byteLength(from));
  const text = readFileSync(file, 'utf8');
  expect(text.split(from)).toHaveLength(2);
  writeFileSync(file, text.replace(from, to));
}

async function settledStore(): Promise<JsonFileStore> {
  const store = await JsonFileStore.open(join(dir, `store-${counter++}.json`));
  await store.transact(async (tx) => {
    await tx.put('attempt', 'sealed', { outcome: 'marker-sealed-0' }, { expectedVersion: null, terminal: true });
    await tx.put('attempt', 'open', { outcome: 'marker-open-00' }, { expectedVersion: null });
    await tx.append('run/r', { note: 'marker-entry-0' });
    await tx.append('run/r', { note: 'marker-entry-1' });
  });
  return store;
}

async function reopened(store: Store, options: JsonFileStoreOptions = {}): Promise<JsonFileStore> {
  await store.close();
  return JsonFileStore.open((store as JsonFileStore).file, options);
}

test('after a reopen, sealed records and log entries are read from the snapshot file, live records from memory', async () => {
  const store = await reopened(await settledStore());
  try {
    // writeFileSync truncates and rewrites the same inode the store holds open: what it reads now is on disk.
    patchInPlace(store.file, 'marker-sealed-0', 'marker-sealed-X');
    patchInPlace(store.file, 'marker-entry-1', 'marker-entry-X');
    patchInPlace(store.file, 'marker-open-00', 'marker-open-XX');
    await store.read(async (r) => {
      expect((await r.get('attempt', 'sealed'))?.data).toEqual({ outcome: 'marker-sealed-X' });
      expect((await r.readLog('run/r')).map((e) => e.data)).toEqual([{ note: 'marker-entry-0' }, { note: 'marker-entry-X' }]);
      expect((await r.readFeed({ after: 0 })).map((e) => e.data)).toEqual([{ note: 'marker-entry-X' }]);
      expect((await r.get('attempt', 'open'))?.data).toEqual({ outcome: 'marker-open-00' });
    });
  } finally {
    await store.close();
  }
});

test('a fold leaves what it wrote on disk: records sealed and entries appended since the reopen too', async () => {
  // Every commit starts a fold.
  const store = await reopened(await settledStore(), { compactAtBytes: 1 });
  try {
    await store.transact(async (tx) => {
      await tx.put('attempt', 'later', { outcome: 'marker-later-0' }, { expectedVersion: null, terminal: true });
      await tx.append('run/r', { note: 'marker-entry-2' });
    });
    await store.foldSettled();
    patchInPlace(store.file, 'marker-later-0', 'marker-later-X');
    patchInPlace(store.file, 'marker-entry-2', 'marker-entry-Y');
    await store.read(async (r) => {
      expect((await r.get('attempt', 'later'))?.data).toEqual({ outcome: 'marker-later-X' });
      expect((await r.readLog('run/r', { after: 1 })).map((e) => e.data)).toEqual([{ note: 'marker-entry-Y' }]);
    });
  } finally {
    await store.close();
  }
});

test('a cold read of a line changed under the store is refused as corrupt, naming the file; the rest still reads', async () => {
  const store = await reopened(await settledStore());
  try {
    patchInPlace(store.file, '{"outcome":"marker-sealed-0"}', '{"outcome":"marker-sealed-0"]');
    await expect(store.read((r) => r.get('attempt', 'sealed'))).rejects.toSatisfy((e) => e instanceof StoreCorruptError && String((e as Error).message).includes(store.file));
    await store.read(async (r) => {
      expect((await r.readLog('run/r')).map((e) => e.sequence)).toEqual([0, 1]);
      expect(await r.version('attempt', 'sealed')).toBe(1);
    });
  } finally {
    await store.close();
  }
});
