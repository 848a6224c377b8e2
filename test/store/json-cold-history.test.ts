import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { ColdRecord } from '../../src/store/cold-lines.js';
import { ColdLineCopier, HistoryFile } from '../../src/store/json/cold-history.js';
import { JsonFileStore, type JsonFileStoreOptions } from '../../src/store/json/index.js';
import { dataChecksum, entryHead, recordHead } from '../../src/store/json/snapshot-lines.js';
import { StoreCorruptError, type Store } from '../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-json-cold-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

/**
 * Overwrites `from` with `to` (same byte length) in the file, where the store left it. A snapshot line
 * carries a checksum of its data, so a deliberate patch restates it, as any editor of the file would have to
 * (unless `keepChecksum`, to change the bytes as a fault would).
 */
function patchInPlace(file: string, from: string, to: string, { keepChecksum = false } = {}): void {
  expect(Buffer.byteLength(to)).toBe(Buffer.byteLength(from));
  const text = readFileSync(file, 'utf8');
  expect(text.split(from)).toHaveLength(2);
  const at = text.indexOf(from);
  const patched = text.replace(from, to);
  writeFileSync(file, keepChecksum ? patched : resealLine(patched, at));
}

/** The text with the checksum of the snapshot line around `at` restated for its data (journal items carry none). */
function resealLine(text: string, at: number): string {
  const start = text.lastIndexOf('\n', at) + 1;
  const end = text.indexOf('\n', at);
  const line = text.slice(start, end);
  const body = line.endsWith(',') ? line.slice(0, -1) : line;
  const head = recordHead(body) ?? entryHead(body);
  if (head?.checksum === undefined) return text;
  const resealed = body.replace(
    `"crc32":"${head.checksum}"`,
    `"crc32":"${dataChecksum(body.slice(head.dataStart, -1))}"`,
  );
  return `${text.slice(0, start)}${resealed}${line.slice(body.length)}${text.slice(end)}`;
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
      expect((await r.readLog('run/r')).map((e) => e.data)).toEqual([
        { note: 'marker-entry-0' },
        { note: 'marker-entry-X' },
      ]);
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
    await expect(store.read((r) => r.get('attempt', 'sealed'))).rejects.toSatisfy(
      (e) => e instanceof StoreCorruptError && String((e as Error).message).includes(store.file),
    );
    await store.read(async (r) => {
      expect((await r.readLog('run/r')).map((e) => e.sequence)).toEqual([0, 1]);
      expect(await r.version('attempt', 'sealed')).toBe(1);
    });
  } finally {
    await store.close();
  }
});

test('right after a commit, its sealed records and log entries are read from the journal, its live records from memory', async () => {
  const store = await settledStore();
  try {
    const journal = `${store.file}.journal`;
    patchInPlace(journal, 'marker-sealed-0', 'marker-sealed-J');
    patchInPlace(journal, 'marker-entry-0', 'marker-entry-J');
    patchInPlace(journal, 'marker-open-00', 'marker-open-JJ');
    await store.read(async (r) => {
      expect((await r.get('attempt', 'sealed'))?.data).toEqual({ outcome: 'marker-sealed-J' });
      expect((await r.readFeed()).map((e) => e.data)).toEqual([{ note: 'marker-entry-J' }, { note: 'marker-entry-1' }]);
      expect((await r.get('attempt', 'open'))?.data).toEqual({ outcome: 'marker-open-00' });
    });
  } finally {
    await store.close();
  }
});

test("a journal replayed on open leaves its groups' history in the journal", async () => {
  const store = await settledStore();
  const copy = join(dir, `store-${counter++}.json`);
  try {
    // A copy of the files as a crash would leave them: the snapshot without the group, the journal with it.
    copyFileSync(store.file, copy);
    copyFileSync(`${store.file}.journal`, `${copy}.journal`);
  } finally {
    await store.close();
  }
  const replayed = await JsonFileStore.open(copy);
  try {
    patchInPlace(`${copy}.journal`, 'marker-sealed-0', 'marker-sealed-R');
    patchInPlace(`${copy}.journal`, 'marker-entry-1', 'marker-entry-R');
    await replayed.read(async (r) => {
      expect((await r.get('attempt', 'sealed'))?.data).toEqual({ outcome: 'marker-sealed-R' });
      expect((await r.readLog('run/r')).map((e) => e.data)).toEqual([
        { note: 'marker-entry-0' },
        { note: 'marker-entry-R' },
      ]);
    });
  } finally {
    await replayed.close();
  }
});

test('history left in the journal moves with it: to the snapshot when folded, and along when a fold cuts the journal', async () => {
  // Every commit starts a fold unless one is running: the first commit's fold runs while the second commits.
  const store = await JsonFileStore.open(join(dir, `store-${counter++}.json`), { compactAtBytes: 1 });
  try {
    await store.transact(async (tx) => {
      await tx.put('attempt', 'second', { outcome: 'marker-second0' }, { expectedVersion: null, terminal: true });
      await tx.append('run/s', { note: 'marker-entry-s' });
    });
    await store.transact(async (tx) => {
      await tx.put('attempt', 'during', { outcome: 'marker-during0' }, { expectedVersion: null, terminal: true });
      await tx.append('run/d', { note: 'marker-entry-d' });
    });
    await store.foldSettled();
    patchInPlace(store.file, 'marker-second0', 'marker-secondS');
    patchInPlace(`${store.file}.journal`, 'marker-during0', 'marker-duringJ');
    patchInPlace(`${store.file}.journal`, 'marker-entry-d', 'marker-entry-J');
    await store.read(async (r) => {
      expect((await r.get('attempt', 'second'))?.data).toEqual({ outcome: 'marker-secondS' });
      expect((await r.get('attempt', 'during'))?.data).toEqual({ outcome: 'marker-duringJ' });
      expect((await r.readLog('run/d')).map((e) => e.data)).toEqual([{ note: 'marker-entry-J' }]);
      expect((await r.readFeed()).map((e) => e.stream)).toEqual(['run/s', 'run/d']);
    });
  } finally {
    await store.close();
  }
});

test('a fold meeting a journal item changed under the store refuses it and leaves the snapshot as it was', async () => {
  const store = await settledStore();
  const snapshotBefore = readFileSync(store.file);
  patchInPlace(`${store.file}.journal`, '["attempt","sealed",1,true,', '["attempt","sealeX",1,true,');
  await expect(store.close()).rejects.toBeInstanceOf(StoreCorruptError);
  expect(readFileSync(store.file).equals(snapshotBefore)).toBe(true);
});

test("a fold takes the journal's bytes off the event loop, before it encodes; it reads none of them synchronously", async () => {
  const store = await settledStore();
  const readAhead = vi.spyOn(HistoryFile.prototype, 'readHead');
  const readInline = vi.spyOn(HistoryFile.prototype, 'readAtMost');
  try {
    await store.close();
    const journal = (calls: ReadonlyArray<{ layout: string }>) => calls.filter((file) => file.layout === 'journal');
    expect(journal(readAhead.mock.contexts as HistoryFile[])).toHaveLength(1);
    expect(journal(readInline.mock.contexts as HistoryFile[])).toEqual([]);
    const reopened = await JsonFileStore.open(store.file);
    await reopened.read(async (r) =>
      expect((await r.get('attempt', 'sealed'))?.data).toEqual({ outcome: 'marker-sealed-0' }),
    );
    await reopened.close();
  } finally {
    readAhead.mockRestore();
    readInline.mockRestore();
  }
});

test('a journal read ahead short of an item is read again whole: the item is copied, not refused', async () => {
  const file = join(dir, `journal-${counter++}`);
  const item = '["attempt","sealed",1,true,{"outcome":"x"}]';
  writeFileSync(file, `header\n${item}\n`);
  const history = new HistoryFile(file, 'journal');
  try {
    const journals = new Map([[history, await history.readHead(4)]]);
    const cold = new ColdRecord('attempt', 'sealed', 1, history, 7, Buffer.byteLength(item));
    expect(new ColdLineCopier(journals).bytesOf(cold).toString()).toBe(item);
    expect(journals.get(history)!.toString()).toBe(`header\n${item}\n`);
  } finally {
    history.close();
  }
});
