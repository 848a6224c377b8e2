import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, test, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { CHECKPOINT_AFTER_WRITES } from '../../src/store/sqlite/log-folder.js';
import { StoreConflictError, StoreCorruptError, StoreLockedError, type Store } from '../../src/store/store.js';
import { describeStoreConformance } from './store-conformance.js';
import { entryChecksum, recordChecksum } from '../../src/store/sqlite/sqlite-rows.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-sqlite-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

describeStoreConformance('SQLite', {
  create: () => SqliteStore.open(join(dir, `store-${counter++}.sqlite`)),
  reopen: async (store: Store) => {
    await store.close();
    return SqliteStore.open((store as SqliteStore).file);
  },
});

test('a second opener is refused naming the holder; a foreign file is refused and left untouched', async () => {
  const file = join(dir, 'locked.sqlite');
  const store = await SqliteStore.open(file);
  await expect(SqliteStore.open(file)).rejects.toBeInstanceOf(StoreLockedError);
  await store.close();
  const foreign = join(dir, 'foreign.sqlite');
  writeFileSync(foreign, 'not a database at all');
  await expect(SqliteStore.open(foreign)).rejects.toBeInstanceOf(StoreCorruptError);
  expect(readFileSync(foreign, 'utf8')).toBe('not a database at all');
});

test('the database itself refuses a second run for one fence and one session bound to two attempts', async () => {
  const store = await SqliteStore.open(join(dir, 'unique.sqlite'));
  const run = (occurrenceId: string, fenceGeneration: number) => ({
    snapshot: { context: { occurrenceId, fenceGeneration } },
  });
  const attempt = (sessionId: string | null) => ({ snapshot: { context: { sessionId } } });
  await store.transact(async (tx) => {
    await tx.put('run', 'run-a', run('occ-1', 1), { expectedVersion: null });
    await tx.put('attempt', 'att-1', attempt('session-1'), { expectedVersion: null });
    await tx.put('attempt', 'att-2', attempt(null), { expectedVersion: null });
    await tx.put('attempt', 'att-3', attempt(null), { expectedVersion: null });
  });
  await expect(
    store.transact((tx) => tx.put('run', 'run-b', run('occ-1', 1), { expectedVersion: null })),
  ).rejects.toBeInstanceOf(StoreConflictError);
  await expect(
    store.transact((tx) => tx.put('attempt', 'att-2', attempt('session-1'), { expectedVersion: 1 })),
  ).rejects.toBeInstanceOf(StoreConflictError);
  // A later fence of the same occurrence and a fresh session are fine; the refused writes left nothing behind.
  await store.transact((tx) => tx.put('run', 'run-c', run('occ-1', 2), { expectedVersion: null }));
  await store.transact((tx) => tx.put('attempt', 'att-2', attempt('session-2'), { expectedVersion: 1 }));
  expect(await store.read((r) => r.get('run', 'run-b'))).toBeUndefined();
  expect((await store.read((r) => r.get('attempt', 'att-2')))?.version).toBe(2);
  await store.close();
});

test('a transaction that finds the file locked by another connection fails alone, is counted, and writes nothing', async () => {
  const file = join(dir, 'busy.sqlite');
  const store = await SqliteStore.open(file, { busyTimeoutMs: 20 });
  await store.transact((tx) => tx.put('k', 'a', { n: 1 }, { expectedVersion: null }));
  const outsider = new Database(file);
  outsider.exec('BEGIN IMMEDIATE');
  await expect(store.transact((tx) => tx.put('k', 'a', { n: 2 }, { expectedVersion: 1 }))).rejects.toMatchObject({
    code: 'SQLITE_BUSY',
  });
  expect(store.busyErrors).toBe(1);
  outsider.exec('ROLLBACK');
  outsider.close();
  expect((await store.read((r) => r.get('k', 'a')))?.data).toEqual({ n: 1 });
  await store.transact((tx) => tx.put('k', 'a', { n: 2 }, { expectedVersion: 1 }));
  expect((await store.read((r) => r.get('k', 'a')))?.version).toBe(2);
  expect(store.busyErrors).toBe(1);
  await store.close();
});

test("what the writer remembers never outlives another connection's commit or a rolled-back transaction", async () => {
  const file = join(dir, 'heads.sqlite');
  const store = await SqliteStore.open(file);
  await store.transact(async (tx) => {
    await tx.append('occurrence/a', { n: 0 });
    await tx.append('occurrence/a', { n: 1 });
    await tx.put('k', 'a', { n: 1 }, { expectedVersion: null });
    expect(await tx.get('k', 'b')).toBeUndefined();
  });
  // The writer remembers records (and absences), stream heads and the feed position; an outside commit
  // must not leave them stale.
  const outsider = new Database(file);
  // (with the checksums this build writes: a row without one is refused as changed)
  outsider
    .prepare('INSERT INTO log (position, stream, sequence, data, crc) VALUES (2, ?, 2, ?, ?)')
    .run('occurrence/a', '{"n":2}', entryChecksum('occurrence/a', 2, 2, '{"n":2}'));
  outsider
    .prepare("UPDATE records SET version = 2, data = '{\"n\":2}', crc = ? WHERE kind = 'k' AND id = 'a'")
    .run(recordChecksum('k', 'a', 2, 0, '{"n":2}'));
  outsider
    .prepare("INSERT INTO records (kind, id, version, terminal, data, crc) VALUES ('k', 'b', 1, 0, '{}', ?)")
    .run(recordChecksum('k', 'b', 1, 0, '{}'));
  outsider.close();
  await store.transact(async (tx) => {
    expect((await tx.get('k', 'a'))?.data).toEqual({ n: 2 });
    expect((await tx.get('k', 'b'))?.version).toBe(1);
  });
  await expect(store.transact((tx) => tx.put('k', 'a', { n: 3 }, { expectedVersion: 1 }))).rejects.toBeInstanceOf(
    StoreConflictError,
  );
  // A rolled-back transaction's appends must not be remembered either.
  await expect(
    store.transact(async (tx) => {
      await tx.append('occurrence/a', { n: 'rolled back' });
      await tx.put('k', 'a', { n: 'rolled back' }, { expectedVersion: 2 });
      await tx.delete('k', 'b', 1);
      throw new Error('abandon');
    }),
  ).rejects.toThrow('abandon');
  await store.transact(async (tx) => {
    expect(await tx.get('k', 'a')).toMatchObject({ version: 2, data: { n: 2 } });
    expect((await tx.get('k', 'b'))?.version).toBe(1);
  });
  const entry = await store.transact((tx) => tx.append('occurrence/a', { n: 3 }, 3));
  expect([entry.sequence, entry.position]).toEqual([3, 3]);
  const log = await store.read((r) => r.readLog<{ n: number }>('occurrence/a'));
  expect(log.map((e) => [e.sequence, e.position, e.data.n])).toEqual([
    [0, 0, 0],
    [1, 1, 1],
    [2, 2, 2],
    [3, 3, 3],
  ]);
  await store.close();
});

test('a new store uses 2 KiB pages; a store made with 4 KiB pages keeps them and stays usable', async () => {
  const pageSize = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return db.pragma('page_size', { simple: true });
    } finally {
      db.close();
    }
  };
  const fresh = join(dir, 'pages-new.sqlite');
  await (await SqliteStore.open(fresh)).close();
  expect(pageSize(fresh)).toBe(2048);
  const older = join(dir, 'pages-old.sqlite');
  const db = new Database(older);
  db.pragma('page_size = 4096');
  db.exec(
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schemaVersion', '1');",
  );
  db.close();
  const store = await SqliteStore.open(older);
  await store.transact((tx) => tx.put('k', 'a', { n: 1 }, { expectedVersion: null }));
  await store.close();
  expect(pageSize(older)).toBe(4096);
  const reopened = await SqliteStore.open(older);
  expect((await reopened.read((r) => r.get('k', 'a')))?.data).toEqual({ n: 1 });
  await reopened.close();
});

test('a store made with the earlier records layout (WITHOUT ROWID) opens and keeps every guarantee', async () => {
  const file = join(dir, 'earlier-layout.sqlite');
  const db = new Database(file);
  db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (kind TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, terminal INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID;
    INSERT INTO meta VALUES ('schemaVersion', '1');
    INSERT INTO records VALUES ('k', 'a', 1, 0, '{"n":1}');`);
  db.close();
  const store = await SqliteStore.open(file);
  expect((await store.read((r) => r.get('k', 'a')))?.data).toEqual({ n: 1 });
  await store.transact((tx) => tx.put('k', 'a', { n: 2 }, { expectedVersion: 1 }));
  await expect(store.transact((tx) => tx.put('k', 'a', { n: 3 }, { expectedVersion: 1 }))).rejects.toBeInstanceOf(
    StoreConflictError,
  );
  await expect(store.transact((tx) => tx.put('k', 'a', { n: 3 }, { expectedVersion: null }))).rejects.toBeInstanceOf(
    StoreConflictError,
  );
  await store.transact((tx) => tx.put('k', 'b', { n: 1 }, { expectedVersion: null, terminal: true }));
  expect((await store.read((r) => r.list('k'))).map((r) => [r.id, r.version])).toEqual([
    ['a', 2],
    ['b', 1],
  ]);
  await store.close();
});

test('commits stay in the write-ahead log until checkpoint() folds them, once enough rows were written, while a group is open too', async () => {
  const file = join(dir, 'checkpoint.sqlite');
  const store = await SqliteStore.open(file);
  const dbBytes = () => statSync(file).size;
  const write = async (batch: number, rows: number) =>
    store.transact(async (tx) => {
      for (let i = 0; i < rows; i++)
        await tx.put('k', `r-${batch}-${i}`, { text: 'x'.repeat(400) }, { expectedVersion: null });
    });
  // A process's first commit is copied into the database file with the mark that the store is open
  // (sqlite-watermark.ts); the commits after it wait in the log.
  await write(-1, 1);
  const before = dbBytes();
  // A trickle of writes is not worth a database-file fsync: it waits in the log.
  await write(0, 10);
  await store.checkpoint();
  expect(dbBytes()).toBe(before);
  // ≈ 500 KB in all: far below the log's own bound, so SQLite folds nothing by itself.
  for (let batch = 1; batch <= 4; batch++) await write(batch, CHECKPOINT_AFTER_WRITES / 4);
  expect(dbBytes()).toBe(before);
  // The checkpoint runs on a connection of its own: inside a transaction it folds what was committed, and
  // neither waits for the open group nor takes its uncommitted row.
  await store.transact(async (tx) => {
    await tx.put('k', 'inside', { n: 1 }, { expectedVersion: null });
    await store.checkpoint();
    expect(dbBytes()).toBeGreaterThan(before + 400_000);
    expect(await store.read((r) => r.get('k', 'inside'))).toBeUndefined();
  });
  expect((await store.read((r) => r.list('k'))).length).toBe(1 + 10 + CHECKPOINT_AFTER_WRITES + 1);
  // Below the bound again: the next call folds nothing.
  const folded = dbBytes();
  await write(5, 10);
  await store.checkpoint();
  expect(dbBytes()).toBe(folded);
  await store.close();
  await store.checkpoint();
});

test('a store closed while its checkpoint thread folds the log waits for it, then closes last and leaves no log', async () => {
  const file = join(dir, 'checkpoint-close.sqlite');
  const store = await SqliteStore.open(file);
  await store.transact(async (tx) => {
    for (let i = 0; i < CHECKPOINT_AFTER_WRITES; i++)
      await tx.put('k', `r-${i}`, { text: 'x'.repeat(400) }, { expectedVersion: null });
  });
  const folding = store.checkpoint();
  await store.close();
  await folding;
  // The writer was the last connection: closing it copied the whole log into the file and removed it.
  expect(existsSync(`${file}-wal`)).toBe(false);
  const reopened = await SqliteStore.open(file);
  expect((await reopened.read((r) => r.list('k'))).length).toBe(CHECKPOINT_AFTER_WRITES);
  await reopened.close();
});

test('a checkpoint thread that died leaves the folding to the writer: the log is still folded', async () => {
  const file = join(dir, 'checkpoint-died.sqlite');
  const store = await SqliteStore.open(file);
  const write = (batch: number) =>
    store.transact(async (tx) => {
      for (let i = 0; i < CHECKPOINT_AFTER_WRITES; i++)
        await tx.put('k', `r-${batch}-${i}`, { text: 'x'.repeat(400) }, { expectedVersion: null });
    });
  await write(0);
  await store.checkpoint();
  // The thread dies as a crashed worker would (reached through the store's private parts: nothing public kills it).
  const thread = (
    store as unknown as { folder: { thread: { worker: { terminate(): Promise<number> }; ended: boolean } } }
  ).folder.thread;
  await thread.worker.terminate();
  await vi.waitFor(() => expect(thread.ended).toBe(true));
  const before = statSync(file).size;
  await write(1);
  // The writer cannot fold while it holds a group open: that fold waits for the next call.
  await store.transact(async (tx) => {
    await tx.put('k', 'inside', { n: 1 }, { expectedVersion: null });
    await store.checkpoint();
    expect(statSync(file).size).toBe(before);
  });
  await store.checkpoint();
  expect(statSync(file).size).toBeGreaterThan(before + 400_000);
  await store.close();
  expect(existsSync(`${file}-wal`)).toBe(false);
});

test('ids and versions of definitions and plan cursors come from covering partial indexes, on new and existing stores', async () => {
  const file = join(dir, 'versions-index.sqlite');
  const store = await SqliteStore.open(file);
  await store.transact(async (tx) => {
    await tx.put('definition', 'b', { body: 'x'.repeat(3000) }, { expectedVersion: null });
    await tx.put('definition', 'a', {}, { expectedVersion: null });
    await tx.put('plan-cursor', 'a', { lastSlot: 't' }, { expectedVersion: null });
    await tx.put('occurrence', 'a', {}, { expectedVersion: null });
  });
  await store.transact((tx) => tx.put('definition', 'a', {}, { expectedVersion: 1 }));
  expect(await store.read((r) => r.versions('definition'))).toEqual([
    { id: 'a', version: 2 },
    { id: 'b', version: 1 },
  ]);
  expect(await store.read((r) => r.versions('definition', { after: 'a' }))).toEqual([{ id: 'b', version: 1 }]);
  expect(await store.read((r) => r.versions('plan-cursor'))).toEqual([{ id: 'a', version: 1 }]);
  await store.close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (index: string, kind: string) =>
      (
        db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT id, version FROM records INDEXED BY ${index} WHERE kind = '${kind}' ORDER BY id LIMIT ?`,
          )
          .all(-1) as Array<{ detail: string }>
      )
        .map((r) => r.detail)
        .join(' ');
    expect(plan('versions_of_definitions', 'definition')).toContain('COVERING INDEX versions_of_definitions');
    expect(plan('versions_of_plan_cursors', 'plan-cursor')).toContain('COVERING INDEX versions_of_plan_cursors');
    // Only the listed kinds are in them: other records' writes never touch these indexes.
    expect(
      db
        .prepare("SELECT COUNT(*) AS n FROM records INDEXED BY versions_of_definitions WHERE kind = 'definition'")
        .get(),
    ).toEqual({ n: 2 });
  } finally {
    db.close();
  }
});
