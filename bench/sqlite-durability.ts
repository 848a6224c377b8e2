// What the SQLite store's commit watermark costs, side by side in one run (rounds interleaved, so load on
// the machine falls on every variant alike):
//   store WAL, no watermark      SqliteStore with the watermark write skipped: how the store committed before
//   store WAL + watermark        SqliteStore as shipped: each commit also writes <file>.commits and fdatasyncs it
//   raw WAL                      better-sqlite3 alone, one INSERT per transaction, journal_mode=WAL
//   raw TRUNCATE / raw DELETE    the same in rollback-journal modes, whose commits live in the database file
//   watermark write alone        CommitWatermark.write: the pwrite + fdatasync each commit adds, by itself
// All synchronous=FULL, 2 KiB pages, 1,000 records preloaded. "grouped" issues 256 transactions at once
// (the store folds them into group commits). Run: npx tsx bench/sqlite-durability.ts [-- --rounds 6]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { CommitWatermark } from '../src/store/sqlite/sqlite-watermark.js';
import { summarize, table, timeEach } from './stats.js';

const RECORD = { state: 'planned', reason: 'x'.repeat(420), scheduledFor: '2026-03-01T09:00:00.000Z' };
const PRELOAD = 1_000;
const SAMPLES = 100;
const GROUPED = 256;

const rounds = () => {
  const i = process.argv.indexOf('--rounds');
  return i === -1 ? 6 : Number(process.argv[i + 1]);
};

type Variant = 'store WAL, no watermark' | 'store WAL + watermark';
type RawMode = 'WAL' | 'TRUNCATE' | 'DELETE';

/** Sequential commit latencies and grouped throughput of one freshly preloaded store. */
async function measureStore(file: string, variant: Variant): Promise<{ latencies: number[]; perSecond: number }> {
  const store = await SqliteStore.open(file);
  const held = store as unknown as { watermark: { write(n: number): Promise<void>; close(): Promise<void> } };
  const real = held.watermark;
  if (variant === 'store WAL, no watermark')
    held.watermark = { write: () => Promise.resolve(), close: () => real.close() };
  try {
    await store.transact(async (tx) => {
      for (let i = 0; i < PRELOAD; i++) await tx.put('occurrence', `occ-${i}`, RECORD, { expectedVersion: null });
    });
    const commit = (i: number) => store.transact((tx) => tx.put('run', `run-${i}`, RECORD, { expectedVersion: null }));
    const latencies = await timeEach(SAMPLES, commit);
    const start = performance.now();
    await Promise.all(Array.from({ length: GROUPED }, (_, i) => commit(SAMPLES + i)));
    return { latencies, perSecond: (GROUPED / (performance.now() - start)) * 1000 };
  } finally {
    await store.close();
  }
}

async function measureRaw(file: string, mode: RawMode): Promise<number[]> {
  const db = new Database(file);
  try {
    db.pragma('page_size = 2048');
    db.pragma(`journal_mode = ${mode}`);
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE records (kind TEXT, id TEXT, version INTEGER, data TEXT, UNIQUE (kind, id))');
    const insert = db.prepare("INSERT INTO records VALUES ('run', ?, 1, ?)");
    const data = JSON.stringify(RECORD);
    db.transaction(() => {
      for (let i = 0; i < PRELOAD; i++) insert.run(`occ-${i}`, data);
    })();
    return await timeEach(SAMPLES, async (i) => db.transaction(() => insert.run(`run-${i}`, data))());
  } finally {
    db.close();
  }
}

async function measureWatermark(file: string): Promise<number[]> {
  const watermark = await CommitWatermark.open(file, 1_000, true);
  try {
    return await timeEach(SAMPLES, (i) => watermark.write(1_001 + i));
  } finally {
    await watermark.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-sqlite-durability-'));
  const latencies = new Map<string, number[]>();
  const grouped = new Map<string, number[]>();
  const add = <T>(map: Map<string, T[]>, key: string, values: T[]) =>
    map.set(key, [...(map.get(key) ?? []), ...values]);
  let n = 0;
  try {
    for (let round = 0; round < rounds(); round++) {
      // Each round swaps which store variant goes first, so neither always follows the raw rollback modes.
      const variants = ['store WAL, no watermark', 'store WAL + watermark'] as const;
      for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
        const { latencies: l, perSecond } = await measureStore(join(dir, `${n++}.sqlite`), variant);
        add(latencies, variant, l);
        add(grouped, variant, [perSecond]);
      }
      for (const mode of ['WAL', 'TRUNCATE', 'DELETE'] as const)
        add(latencies, `raw ${mode}`, await measureRaw(join(dir, `${n++}.sqlite`), mode));
      add(latencies, 'watermark write alone', await measureWatermark(join(dir, `${n++}.sqlite`)));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const base = summarize(latencies.get('store WAL, no watermark')!).medianMs;
  const rawBase = summarize(latencies.get('raw WAL')!).medianMs;
  const groupedBase = median(grouped.get('store WAL, no watermark')!);
  const rows = [...latencies].map(([name, values]) => {
    const s = summarize(values);
    const g = grouped.get(name);
    return [
      name,
      s.medianMs,
      s.p95Ms,
      s.medianMs / (name.startsWith('store') ? base : rawBase),
      g === undefined ? Number.NaN : median(g),
      g === undefined ? Number.NaN : median(g) / groupedBase,
    ];
  });
  console.log(
    `SQLite commit durability, ${rounds()} rounds x ${SAMPLES} sequential commits (+ ${GROUPED} grouped) each\n` +
      table(['variant', 'commit median ms', 'p95 ms', 'x its WAL', 'grouped commits/s', 'grouped x before'], rows),
  );
}

await main();
