import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { afterAll, expect, test } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { StoreCorruptError, type StoreReader } from '../../src/store/store.js';
import { propertySeed } from '../support/property.js';

// A store killed after acknowledged commits keeps them in its write-ahead log until a checkpoint. Issue 36:
// deleting, emptying or damaging `-wal` (or `-shm`) after a kill lost them silently (130 of 130 flips; `list`
// printed an empty store). Every such change must be refused at open or lose nothing.

const dir = mkdtempSync(join(tmpdir(), 'coven-sqlite-wal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `${counter++}-store.sqlite`);
/** The files a killed store leaves; the watermark beside them, if this build keeps one. */
const SIDE_FILES = ['-wal', '-shm', '.commits'];

const definition = (revision: number, hour: number) => ({
  automationId: 'daily-notes',
  revision,
  action: { kind: 'prompt', prompt: 'Write the daily reflection.' },
  trigger: { kind: 'schedule', rrule: `FREQ=DAILY;BYHOUR=${hour}` },
});

/** A store with one checkpointed commit, then acknowledged commits only in its log; copied as a kill leaves it. */
async function killedImage(): Promise<Map<string, Buffer>> {
  const file = freshFile();
  const first = await SqliteStore.open(file);
  await first.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 8), { expectedVersion: null }));
  await first.close();
  const store = await SqliteStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(2, 9), { expectedVersion: 1 }));
  for (let i = 0; i < 3; i++)
    await store.transact(async (tx) => {
      await tx.put(
        'occurrence',
        `occ-${i}`,
        { scheduledFor: `2026-03-0${i + 1}T09:00:00.000Z` },
        { expectedVersion: null },
      );
      await tx.append('automation/daily-notes', { kind: 'occurrence.planned', occurrenceId: `occ-${i}` });
    });
  const image = new Map<string, Buffer>();
  for (const suffix of ['', ...SIDE_FILES])
    if (existsSync(`${file}${suffix}`)) image.set(suffix, readFileSync(`${file}${suffix}`));
  await store.close();
  return image;
}

function lay(image: Map<string, Buffer>, change: (file: string) => void = () => undefined): string {
  const file = freshFile();
  for (const [suffix, bytes] of image) writeFileSync(`${file}${suffix}`, bytes);
  change(file);
  return file;
}

async function readEverything(r: StoreReader): Promise<string> {
  const out: unknown[] = [];
  for (const kind of ['definition', 'occurrence']) out.push(await r.list(kind), await r.versions(kind));
  out.push(await r.readLog('automation/daily-notes'), await r.readFeed({ after: -1 }));
  return JSON.stringify(out);
}

type Outcome = 'refused at open' | 'refused at read' | 'nothing lost' | 'commits lost or changed';

async function openAndRead(file: string, committed: string): Promise<Outcome> {
  let store: SqliteStore;
  try {
    store = await SqliteStore.open(file);
  } catch (error) {
    if (error instanceof StoreCorruptError) return 'refused at open';
    throw error;
  }
  try {
    return (await store.read(readEverything)) === committed ? 'nothing lost' : 'commits lost or changed';
  } catch (error) {
    if (error instanceof StoreCorruptError) return 'refused at read';
    throw error;
  } finally {
    await store.close();
  }
}

const flipBit = (path: string, bit: number) => {
  const bytes = readFileSync(path);
  bytes[bit >> 3]! ^= 1 << (bit & 7);
  writeFileSync(path, bytes);
};

test.each([
  ['-wal deleted', (f: string) => rmSync(`${f}-wal`)],
  ['-wal emptied', (f: string) => truncateSync(`${f}-wal`, 0)],
  [
    '-wal cut to its last commit but one',
    (f: string) => truncateSync(`${f}-wal`, readFileSync(`${f}-wal`).length - 2_072),
  ],
  ['-wal and -shm deleted', (f: string) => (rmSync(`${f}-wal`), rmSync(`${f}-shm`))],
  ['-wal replaced by an older copy', (f: string) => copyFileSync(`${f}.older-wal`, `${f}-wal`)],
])('a killed store whose %s is refused at open, naming the file, and left as found', async (_what, change) => {
  const image = await killedImage();
  const file = lay(image, (f) => {
    if (_what.includes('older')) writeFileSync(`${f}.older-wal`, image.get('-wal')!.subarray(0, 32 + 2 * 2_072));
    change(f);
  });
  // `-shm` is left out: it is shared memory any reader rebuilds, not data (test/support/store-bytes.ts).
  const kept = ['', '-wal', '.commits'];
  const before = kept.map((s) => (existsSync(`${file}${s}`) ? readFileSync(`${file}${s}`) : null));
  const error = await SqliteStore.open(file).catch((e: unknown) => e);
  if (!(error instanceof StoreCorruptError)) await (error as SqliteStore).close();
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toContain(file);
  const after = kept.map((s) => (existsSync(`${file}${s}`) ? readFileSync(`${file}${s}`) : null));
  expect(after).toEqual(before);
});

test.each([
  ['-shm deleted', (f: string) => rmSync(`${f}-shm`)],
  ['-shm emptied', (f: string) => truncateSync(`${f}-shm`, 0)],
  ['-shm zeroed', (f: string) => writeFileSync(`${f}-shm`, Buffer.alloc(readFileSync(`${f}-shm`).length))],
])('a killed store whose %s opens with every acknowledged commit', async (_what, change) => {
  const image = await killedImage();
  const committed = await SqliteStore.open(lay(image)).then(async (s) => {
    const text = await s.read(readEverything);
    await s.close();
    return text;
  });
  expect(committed).toContain('BYHOUR=9');
  expect(await openAndRead(lay(image, change), committed)).toBe('nothing lost');
});

test("a bit flipped anywhere in a killed store's -wal or -shm is refused at open or loses nothing", async () => {
  const image = await killedImage();
  const committed = await SqliteStore.open(lay(image)).then(async (s) => {
    const text = await s.read(readEverything);
    await s.close();
    return text;
  });
  const flips = process.env.COVEN_STRESS === '1' ? 1_000 : 100;
  if (flips < 1_000) console.info('[sqlite -wal/-shm bit flips] 100 flips; COVEN_STRESS=1 runs 1,000');
  const seed = propertySeed('sqlite -wal/-shm bit flips');
  const walBits = image.get('-wal')!.length * 8;
  const shmBits = image.get('-shm')!.length * 8;
  const bits = fc.sample(fc.integer({ min: 0, max: walBits + shmBits - 1 }), { seed, numRuns: flips });
  const counts: Record<string, number> = {};
  for (const bit of bits) {
    const file = lay(image, (f) => (bit < walBits ? flipBit(`${f}-wal`, bit) : flipBit(`${f}-shm`, bit - walBits)));
    const outcome = await openAndRead(file, committed);
    const key = `${outcome} (${bit < walBits ? '-wal' : '-shm'})`;
    counts[key] = (counts[key] ?? 0) + 1;
    for (const suffix of ['', ...SIDE_FILES]) rmSync(`${file}${suffix}`, { force: true });
  }
  console.info(`[sqlite -wal/-shm bit flips] ${flips} flips: ${JSON.stringify(counts)}`);
  expect(Object.keys(counts).filter((k) => k.startsWith('commits lost'))).toEqual([]);
}, 600_000);

test('a killed store whose watermark was deleted (or a database file copied alone while open) is refused: nothing proves its log complete', async () => {
  const image = await killedImage();
  const error = await SqliteStore.open(lay(image, (f) => rmSync(`${f}.commits`))).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toMatch(/not closed cleanly and its commit watermark .*\.commits is missing/);
  const alone = new Map([['', image.get('')!]]);
  await expect(SqliteStore.open(lay(alone))).rejects.toBeInstanceOf(StoreCorruptError);
});

test('a closed store keeps nothing in side files: its database file alone opens with every commit, and gets a watermark', async () => {
  const file = freshFile();
  const store = await SqliteStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 9), { expectedVersion: null }));
  await store.close();
  expect(existsSync(`${file}-wal`)).toBe(false);
  rmSync(`${file}.commits`);
  const reopened = await SqliteStore.open(file);
  expect((await reopened.read((r) => r.get('definition', 'daily-notes')))?.data).toEqual(definition(1, 9));
  await reopened.close();
  expect(readFileSync(`${file}.commits`, 'utf8')).toMatch(/^\{"commits":1,"crc32":"[0-9a-f]{8}"\}\n$/);
});

test('a store made before the watermark opens, and from then on a lost -wal is refused', async () => {
  const file = freshFile();
  const store = await SqliteStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 9), { expectedVersion: null }));
  await store.close();
  // As an earlier build left it: no count, no mark, no watermark file.
  const db = new Database(file);
  db.exec("DELETE FROM meta WHERE key IN ('commits', 'closedCleanly')");
  db.close();
  rmSync(`${file}.commits`);
  const upgraded = await SqliteStore.open(file);
  // The first commit is copied into the database file with the open mark; the second waits in the log.
  await upgraded.transact((tx) => tx.put('definition', 'daily-notes', definition(2, 9), { expectedVersion: 1 }));
  await upgraded.transact((tx) => tx.put('definition', 'daily-notes', definition(3, 9), { expectedVersion: 2 }));
  const wal = `${file}-wal`;
  const killed = new Map([...['', '.commits'].map((s) => [s, readFileSync(`${file}${s}`)] as const)]);
  expect(readFileSync(wal).length).toBeGreaterThan(0);
  await upgraded.close();
  await expect(SqliteStore.open(lay(killed))).rejects.toThrow(/holds 1 commits, but 2 were acknowledged/);
});

test('a deleted database file beside a watermark of acknowledged commits is refused, not replaced by an empty store', async () => {
  const file = freshFile();
  const store = await SqliteStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 9), { expectedVersion: null }));
  await store.close();
  rmSync(file);
  const watermark = readFileSync(`${file}.commits`);
  await expect(SqliteStore.open(file)).rejects.toThrow(/the database file is missing, but .* says 1 commits/);
  expect(existsSync(file)).toBe(false);
  expect(readFileSync(`${file}.commits`)).toEqual(watermark);
});

test('a damaged watermark is refused, naming it', async () => {
  const image = await killedImage();
  const text = image.get('.commits')!.toString();
  const file = lay(image, (f) =>
    writeFileSync(
      `${f}.commits`,
      text.replace(/"commits":(\d+)/, (_, n: string) => `"commits":${Number(n) + 1}`),
    ),
  );
  await expect(SqliteStore.open(file)).rejects.toThrow(/\.commits cannot be used: the commit watermark is damaged/);
});

test('a commit whose watermark cannot be written is not acknowledged, and the store takes no further commit', async () => {
  const file = freshFile();
  const store = await SqliteStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 9), { expectedVersion: null }));
  // The watermark's descriptor closed under it: its next write fails as a full or failing disk would.
  await (store as unknown as { watermark: { close(): Promise<void> } }).watermark.close();
  await expect(
    store.transact((tx) => tx.put('definition', 'daily-notes', definition(2, 9), { expectedVersion: 1 })),
  ).rejects.toThrow(/the commit watermark could not be written .*unacknowledged/);
  await expect(
    store.transact((tx) => tx.put('definition', 'daily-notes', definition(3, 9), { expectedVersion: 2 })),
  ).rejects.toThrow(/the commit watermark could not be written/);
  await store.close().catch(() => undefined);
});
