// Store commit cost at growing sizes, side by side in one run:
//   json            JsonFileStore, one single-record transaction at a time (each a durable journal append)
//   grouped         JsonFileStore, the same transactions issued concurrently (group commit)
//   append floor    append + fdatasync of the bytes one commit added to the journal (the durability floor)
//   rewrite floor   write + fsync of the whole store file (what a whole-file store pays per commit)
//   memory          MemoryStore, same transactions (no I/O: the transaction-machinery ceiling)
//   sqlite          SqliteStore (synchronous=FULL), one single-record transaction at a time
//   sqlite get      SqliteStore, one committed record read back (get of a random preloaded record)
//   sqlite list     SqliteStore, a page of 100 records read back (list with a limit)
// Run: npm run bench:store [-- --sizes 1000,10000,100000]
import { open, rm } from 'node:fs/promises';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonFileStore } from '../src/store/json/index.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import type { Store } from '../src/store/store.js';
import { summarize, table, timeEach, type Summary } from './stats.js';

const RECORD = {
  state: 'planned',
  reason: 'x'.repeat(420),
  fence: { generation: 1 },
  scheduledFor: '2026-03-01T09:00:00.000Z',
};

function argSizes(): number[] {
  const i = process.argv.indexOf('--sizes');
  return i === -1 ? [1_000, 10_000, 100_000] : process.argv[i + 1]!.split(',').map(Number);
}

/** Fewer samples at larger sizes keep the whole run to about a minute on 2 cores. */
const samplesFor = (size: number) => (size <= 1_000 ? 300 : size <= 10_000 ? 100 : 20);

async function preload(store: Store, size: number): Promise<void> {
  await store.transact(async (tx) => {
    for (let i = 0; i < size; i++) await tx.put('occurrence', `occ-${i}`, RECORD, { expectedVersion: null });
  });
}

const oneCommit = (store: Store, i: number) =>
  store.transact((tx) => tx.put('run', `run-${i}`, RECORD, { expectedVersion: null }));

async function rewriteFloor(bytes: number, samples: number, dir: string): Promise<Summary> {
  const path = join(dir, 'floor.json');
  const content = Buffer.alloc(bytes, 0x61);
  const latencies = await timeEach(samples, async () => {
    const handle = await open(path, 'w');
    await handle.writeFile(content);
    await handle.sync();
    await handle.close();
  });
  await rm(path, { force: true });
  return summarize(latencies);
}

async function appendFloor(bytes: number, samples: number, dir: string): Promise<Summary> {
  const path = join(dir, 'floor.journal');
  const handle = await open(path, 'a');
  const line = Buffer.alloc(Math.max(1, Math.round(bytes)), 0x61);
  const latencies = await timeEach(samples, async () => {
    await handle.write(line);
    await handle.datasync();
  });
  await handle.close();
  await rm(path, { force: true });
  return summarize(latencies);
}

const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** SQLite's commit latency and read cost at `size` records (the reads spread over the preloaded records). */
async function measureSqlite(
  file: string,
  size: number,
  samples: number,
): Promise<{ fileMb: number; commit: Summary; get: Summary; list: Summary }> {
  const store = await SqliteStore.open(file);
  try {
    await preload(store, size);
    await store.checkpoint();
    const commit = summarize(await timeEach(samples, (i) => oneCommit(store, i)));
    const spread = (i: number) => (i * 7919) % size;
    const get = summarize(
      await timeEach(samples * 10, (i) => store.read((r) => r.get('occurrence', `occ-${spread(i)}`))),
    );
    const list = summarize(
      await timeEach(samples, (i) =>
        store.read((r) => r.list('occurrence', { after: `occ-${spread(i)}`, limit: 100 })),
      ),
    );
    return { fileMb: (sizeOf(file) + sizeOf(`${file}-wal`)) / 1e6, commit, get, list };
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-store-'));
  const rows: Array<Array<string | number>> = [];
  try {
    for (const size of argSizes()) {
      const samples = samplesFor(size);
      const file = join(dir, `store-${size}.json`);
      const json = await JsonFileStore.open(file);
      await preload(json, size);
      // The fold a large preload triggers runs beside the commits after it and slows them many times over
      // (bench/README.md): measure once it is done.
      await json.foldSettled();
      const journalBefore = sizeOf(`${file}.journal`);
      const sequential = summarize(await timeEach(samples, (i) => oneCommit(json, i)));
      const bytesPerCommit = (sizeOf(`${file}.journal`) - journalBefore) / samples;
      const storeBytes = sizeOf(file) + sizeOf(`${file}.journal`);
      const groupStart = performance.now();
      await Promise.all(Array.from({ length: samples * 10 }, (_, i) => oneCommit(json, samples + i)));
      const groupedPerSecond = ((samples * 10) / (performance.now() - groupStart)) * 1000;
      await json.close();
      const append = await appendFloor(bytesPerCommit, samples, dir);
      const rewrite = await rewriteFloor(storeBytes, samples, dir);

      const memory = new MemoryStore();
      await preload(memory, size);
      const inMemory = summarize(await timeEach(samples, (i) => oneCommit(memory, i)));
      const fileMb = storeBytes / 1e6;
      const sqlite = await measureSqlite(join(dir, `store-${size}.sqlite`), size, samples);

      rows.push(
        [
          size,
          fileMb,
          'json',
          sequential.medianMs,
          sequential.p95Ms,
          sequential.perSecond,
          sequential.medianMs / append.medianMs,
        ],
        [size, fileMb, 'grouped', Number.NaN, Number.NaN, groupedPerSecond, Number.NaN],
        [size, fileMb, 'append floor', append.medianMs, append.p95Ms, append.perSecond, 1],
        [
          size,
          fileMb,
          'rewrite floor',
          rewrite.medianMs,
          rewrite.p95Ms,
          rewrite.perSecond,
          rewrite.medianMs / append.medianMs,
        ],
        [
          size,
          fileMb,
          'memory',
          inMemory.medianMs,
          inMemory.p95Ms,
          inMemory.perSecond,
          inMemory.medianMs / append.medianMs,
        ],
        [
          size,
          sqlite.fileMb,
          'sqlite',
          sqlite.commit.medianMs,
          sqlite.commit.p95Ms,
          sqlite.commit.perSecond,
          sqlite.commit.medianMs / append.medianMs,
        ],
        [size, sqlite.fileMb, 'sqlite get', sqlite.get.medianMs, sqlite.get.p95Ms, sqlite.get.perSecond, Number.NaN],
        [
          size,
          sqlite.fileMb,
          'sqlite list',
          sqlite.list.medianMs,
          sqlite.list.p95Ms,
          sqlite.list.perSecond,
          Number.NaN,
        ],
      );
      console.error(`measured ${size} records`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(table(['records', 'file MB', 'store', 'median ms', 'p95 ms', 'commits/s', 'x append floor'], rows));
}

await main();
