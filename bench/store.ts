// Store commit cost at growing sizes, side by side in one run:
//   json      JsonFileStore, one single-record transaction at a time (each a durable whole-file write)
//   grouped   JsonFileStore, the same transactions issued concurrently (group commit)
//   fs floor  fs write + fsync of the same number of bytes (what any whole-file store must pay)
//   memory    MemoryStore, same transactions (no I/O: the transaction-machinery ceiling)
// Run: npm run bench:store [-- --sizes 1000,10000,100000]
import { open, readFile, rm } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonFileStore } from '../src/store/json-file-store.js';
import { MemoryStore } from '../src/store/memory-store.js';
import type { Store } from '../src/store/store.js';
import { summarize, table, timeEach, type Summary } from './stats.js';

const RECORD = { state: 'planned', reason: 'x'.repeat(420), fence: { generation: 1 }, scheduledFor: '2026-03-01T09:00:00.000Z' };

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

const oneCommit = (store: Store, i: number) => store.transact((tx) => tx.put('run', `run-${i}`, RECORD, { expectedVersion: null }));

async function fsFloor(bytes: Buffer, samples: number, dir: string): Promise<Summary> {
  const path = join(dir, 'floor.json');
  const latencies = await timeEach(samples, async () => {
    const handle = await open(path, 'w');
    await handle.writeFile(bytes);
    await handle.sync();
    await handle.close();
  });
  await rm(path, { force: true });
  return summarize(latencies);
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
      const sequential = summarize(await timeEach(samples, (i) => oneCommit(json, i)));
      // The floor writes the bytes the sequential commits were writing, before the grouped phase grows the file.
      const bytes = await readFile(file);
      const groupStart = performance.now();
      await Promise.all(Array.from({ length: samples * 10 }, (_, i) => oneCommit(json, samples + i)));
      const groupedPerSecond = ((samples * 10) / (performance.now() - groupStart)) * 1000;
      await json.close();
      const floor = await fsFloor(bytes, samples, dir);

      const memory = new MemoryStore();
      await preload(memory, size);
      const inMemory = summarize(await timeEach(samples, (i) => oneCommit(memory, i)));
      const fileMb = bytes.length / 1e6;

      rows.push(
        [size, fileMb, 'json', sequential.medianMs, sequential.p95Ms, sequential.perSecond, sequential.medianMs / floor.medianMs],
        [size, fileMb, 'grouped', Number.NaN, Number.NaN, groupedPerSecond, Number.NaN],
        [size, fileMb, 'fs floor', floor.medianMs, floor.p95Ms, floor.perSecond, 1],
        [size, fileMb, 'memory', inMemory.medianMs, inMemory.p95Ms, inMemory.perSecond, inMemory.medianMs / floor.medianMs],
      );
      console.error(`measured ${size} records`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(table(['records', 'file MB', 'store', 'median ms', 'p95 ms', 'commits/s', 'x fs floor'], rows));
}

await main();
