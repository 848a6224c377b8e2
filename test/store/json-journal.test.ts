import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import { JSON_STORE_FORMAT_VERSION } from '../../src/store/json/json-document.js';
import { StoreCorruptError } from '../../src/store/store.js';

// The JSON store commits by appending one journal line per group and folds the journal into the snapshot
// when it has grown (and on close). These tests hold the crash cases: a torn append, a corrupt journal, and
// a crash between writing a snapshot and emptying the journal.

const dir = mkdtempSync(join(tmpdir(), 'coven-json-journal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);
const journalOf = (file: string) => `${file}.journal`;
/** A journal's group lines, without the header line that names its store and generation. */
const groupLines = (text: string) => text.split('\n').filter((line) => line !== '' && !line.startsWith('{"journal":'));
const HEADER_ONLY =
  /^\{"journal":"coven-automata\/json-journal","storeId":"[^"]+","generation":\d+,"checksums":"crc32"\}\n$/;

/** Three commits, then the files as a process killed right after them would leave them (nothing folded). */
async function crashedAfterThreeCommits(file: string): Promise<{ snapshot: string; journal: string }> {
  const store = await JsonFileStore.open(file);
  for (let n = 1; n <= 3; n++) {
    await store.transact(async (tx) => {
      await tx.put('counter', 'c', { n }, { expectedVersion: n === 1 ? null : n - 1 });
      await tx.append('counter/c', { n });
    });
  }
  const files = { snapshot: readFileSync(file, 'utf8'), journal: readFileSync(journalOf(file), 'utf8') };
  await store.close();
  writeFileSync(file, files.snapshot);
  writeFileSync(journalOf(file), files.journal);
  return files;
}

async function counterOf(file: string): Promise<{ version: number; n: number; log: number[] }> {
  const store = await JsonFileStore.open(file);
  try {
    return await store.read(async (r) => {
      const c = await r.get<{ n: number }>('counter', 'c');
      return {
        version: c!.version,
        n: c!.data.n,
        log: (await r.readLog<{ n: number }>('counter/c')).map((e) => e.data.n),
      };
    });
  } finally {
    await store.close();
  }
}

test('commits append one journal line per group; the snapshot is rewritten only when the journal outgrows it, and on close', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  const snapshot = readFileSync(file, 'utf8');
  for (let n = 1; n <= 20; n++)
    await store.transact((tx) => tx.put('counter', 'c', { n }, { expectedVersion: n === 1 ? null : n - 1 }));
  expect(readFileSync(file, 'utf8')).toBe(snapshot);
  expect(groupLines(readFileSync(journalOf(file), 'utf8'))).toHaveLength(20);
  await store.close();
  expect(readFileSync(journalOf(file), 'utf8')).toMatch(HEADER_ONLY);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
    formatVersion: JSON_STORE_FORMAT_VERSION,
    journalThrough: 20,
    records: { counter: { c: { version: 20, data: { n: 20 } } } },
  });
});

test('a fold does not hold up commits: groups committed while it writes stay in the journal, the groups it holds leave it', async () => {
  const file = freshFile();
  let reached!: () => void;
  let release!: () => void;
  const foldWaiting = new Promise<void>((resolve) => (reached = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let hold = false;
  const store = await JsonFileStore.open(file, {
    compactAtBytes: 0,
    files: {
      rename: async (from, to) => {
        if (hold) {
          hold = false;
          reached();
          await gate;
        }
        await rename(from, to);
      },
    },
  });
  hold = true; // from the first fold on (opening a new store wrote its first snapshot)
  await store.transact((tx) => tx.put('counter', 'c', { n: 1 }, { expectedVersion: null }));
  await foldWaiting;
  // The fold is stopped after writing its temp file; commits still go through.
  for (let n = 2; n <= 4; n++) {
    await store.transact(async (tx) => {
      await tx.put('counter', 'c', { n }, { expectedVersion: n - 1 });
      await tx.append('counter/c', { n });
    });
  }
  release();
  await store.foldSettled();
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    journalThrough: number;
    records: { counter: { c: { data: { n: number } } } };
  };
  expect(snapshot.journalThrough).toBe(1);
  expect(snapshot.records.counter.c.data.n).toBe(1);
  expect(
    groupLines(readFileSync(journalOf(file), 'utf8')).map((line) => (JSON.parse(line) as { seq: number }).seq),
  ).toEqual([2, 3, 4]);
  // A process killed now leaves these two files: they hold every commit once.
  const copy = freshFile();
  copyFileSync(file, copy);
  copyFileSync(journalOf(file), journalOf(copy));
  expect(await counterOf(copy)).toEqual({ version: 4, n: 4, log: [2, 3, 4] });
  await store.close();
  expect(await counterOf(file)).toEqual({ version: 4, n: 4, log: [2, 3, 4] });
});

test('a journal line cut short by a crash was never acknowledged: it is dropped on open, every complete group replays', async () => {
  const file = freshFile();
  const { journal } = await crashedAfterThreeCommits(file);
  appendFileSync(journalOf(file), '{"seq":4,"records":[["counter","c",4,false,{"n"');
  expect(await counterOf(file)).toEqual({ version: 3, n: 3, log: [1, 2, 3] });
  // Folded on close: the torn bytes are gone and the next commits continue the numbering.
  expect(readFileSync(journalOf(file), 'utf8')).toMatch(HEADER_ONLY);
  expect(groupLines(journal)).toHaveLength(3);
  const store = await JsonFileStore.open(file);
  await store.transact((tx) => tx.put('counter', 'c', { n: 4 }, { expectedVersion: 3 }));
  await store.close();
  expect((await counterOf(file)).version).toBe(4);
});

/** Two commits holding multi-byte UTF-8, then the files as they were before the fold on close (the journal replays them). */
async function twoUtf8Commits(file: string): Promise<string> {
  const store = await JsonFileStore.open(file);
  for (const [n, text] of [
    [1, 'café €'],
    [2, 'crab 🦀'],
  ] as const)
    await store.transact((tx) => tx.put('counter', 'c', { n: text }, { expectedVersion: n === 1 ? null : n - 1 }));
  const journal = readFileSync(journalOf(file), 'utf8');
  await store.close();
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    journalThrough: number;
    journalGeneration: number;
    records: Record<string, unknown>;
  };
  delete snapshot.records.counter;
  writeFileSync(
    file,
    JSON.stringify({ ...snapshot, journalThrough: 0, journalGeneration: snapshot.journalGeneration - 1 }),
  );
  return journal;
}

test.each([
  ['its first bytes', '{"crc32":"12'],
  ['all but its newline', ''],
])(
  'a torn last line (%s, no newline) is cut off at its exact byte, after lines holding multi-byte UTF-8',
  async (_what, torn) => {
    const file = freshFile();
    const journal = await twoUtf8Commits(file);
    const lines = journal.split('\n');
    // The last group written again, without its newline: what a crash before the newline reached the disk leaves.
    const tail = torn === '' ? lines[2]!.replace('"seq":2', '"seq":3') : torn;
    writeFileSync(journalOf(file), journal + tail);
    const reopened = await JsonFileStore.open(file);
    try {
      expect(readFileSync(journalOf(file), 'utf8')).toBe(journal);
      expect((await reopened.read((r) => r.get<{ n: string }>('counter', 'c')))?.data.n).toBe('crab 🦀');
    } finally {
      await reopened.close();
    }
  },
);

test.each([
  ['a last line with its newline but cut short', (j: string) => j.slice(0, -9) + '\n'],
  ['a complete last group whose newline changed', (j: string) => j.slice(0, -1) + '\u000b'],
  ['a complete last group whose newline changed, a torn line after it', (j: string) => j.slice(0, -1) + ' {"crc32":"'],
  ['a changed letter in the last group', (j: string) => j.replace('crab', 'crap')],
])("%s is refused naming the journal and the group's offset, both files left as they were", async (_what, damage) => {
  const file = freshFile();
  const original = await twoUtf8Commits(file);
  const lastGroupAt = Buffer.byteLength(original.slice(0, original.lastIndexOf('{"crc32"')));
  const journal = damage(original);
  writeFileSync(journalOf(file), journal);
  const snapshot = readFileSync(file);
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as StoreCorruptError).message).toContain(`${journalOf(file)} cannot be used: the group at byte`);
  expect((error as StoreCorruptError).details).toMatchObject({ file: journalOf(file), offset: lastGroupAt });
  expect(readFileSync(journalOf(file), 'utf8')).toBe(journal);
  expect(readFileSync(file)).toEqual(snapshot);
});

test('a damaged journal line before the last refuses the store and leaves both files as they were', async () => {
  const file = freshFile();
  const { journal } = await crashedAfterThreeCommits(file);
  const lines = journal.split('\n');
  // lines[0] is the header, lines[1] the first group.
  lines[2] = lines[2]!.replace('"seq":2', '"seq":2,');
  const damaged = lines.join('\n');
  writeFileSync(journalOf(file), damaged);
  const snapshot = readFileSync(file, 'utf8');
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as StoreCorruptError).toEnvelope()).toMatchObject({ code: 'INTERNAL', httpStatus: 500 });
  expect(readFileSync(journalOf(file), 'utf8')).toBe(damaged);
  expect(readFileSync(file, 'utf8')).toBe(snapshot);
});

test('a group that does not continue the state (a log entry out of sequence) is refused as corrupt', async () => {
  const file = freshFile();
  const { journal } = await crashedAfterThreeCommits(file);
  expect(journal).toContain('["counter/c",1,');
  writeFileSync(journalOf(file), journal.replace('["counter/c",1,', '["counter/c",4,'));
  await expect(JsonFileStore.open(file)).rejects.toBeInstanceOf(StoreCorruptError);
});

test('a group folds several transactions: a record that moved several versions or was created and deleted in it replays', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await store.transact((tx) => tx.put('index', 'gone', { n: 0 }, { expectedVersion: null }));
  // Queued together, so they share one group (one journal line).
  await Promise.all([
    store.transact((tx) => tx.put('counter', 'c', { n: 1 }, { expectedVersion: null })),
    store.transact((tx) => tx.put('counter', 'c', { n: 2 }, { expectedVersion: 1 })),
    store.transact((tx) => tx.put('counter', 'c', { n: 3 }, { expectedVersion: 2 })),
    store.transact((tx) => tx.delete('index', 'gone', 1)),
    store.transact((tx) => tx.put('index', 'brief', { n: 0 }, { expectedVersion: null })),
    store.transact((tx) => tx.delete('index', 'brief', 1)),
  ]);
  const journal = readFileSync(journalOf(file), 'utf8');
  const snapshot = readFileSync(file, 'utf8');
  await store.close();
  writeFileSync(file, snapshot);
  writeFileSync(journalOf(file), journal);
  const reopened = await JsonFileStore.open(file);
  expect(
    await reopened.read(async (r) => [
      (await r.get('counter', 'c'))?.version,
      await r.get('index', 'gone'),
      await r.get('index', 'brief'),
    ]),
  ).toEqual([3, undefined, undefined]);
  await reopened.close();
});

test('a crash between writing a snapshot and emptying the journal replays nothing twice', async () => {
  const file = freshFile();
  const { journal } = await crashedAfterThreeCommits(file);
  // Fold (open + close), then put the already-folded groups back, as if the journal was never emptied.
  await (await JsonFileStore.open(file)).close();
  writeFileSync(journalOf(file), journal);
  expect(await counterOf(file)).toEqual({ version: 3, n: 3, log: [1, 2, 3] });
  writeFileSync(journalOf(file), journal);
  const store = await JsonFileStore.open(file);
  await store.transact((tx) => tx.put('counter', 'c', { n: 4 }, { expectedVersion: 3 }));
  await store.close();
  expect(await counterOf(file)).toMatchObject({ version: 4, n: 4 });
});

test.each([
  [
    '1 (before the journal)',
    `{"format":"coven-automata/json-store","formatVersion":1,"records":{"counter":{"c":{"version":1,"terminal":false,"data":{"n":1}}}},"log":[{"stream":"counter/c","sequence":0,"data":{"n":1}}]}\n`,
  ],
  [
    '2 (before retention)',
    `{"format":"coven-automata/json-store","formatVersion":2,"journalThrough":0,"records":{"counter":{"c":{"version":1,"terminal":false,"data":{"n":1}}}},"log":[{"stream":"counter/c","sequence":0,"data":{"n":1}}]}\n`,
  ],
  [
    '3 (before the line layout)',
    `{"format":"coven-automata/json-store","formatVersion":3,"journalThrough":0,"nextPosition":1,"records":{\n"counter":{\n"c":{"version":1,"terminal":false,"data":{"n":1}}}},\n"log":[\n{"stream":"counter/c","sequence":0,"position":0,"data":{"n":1}}]}\n`,
  ],
])(
  'a version %s store file opens, positions are its log indexes, and it is written in the current version on its next fold',
  async (_, text) => {
    const file = freshFile();
    writeFileSync(file, text);
    const store = await JsonFileStore.open(file);
    await store.transact(async (tx) => {
      await tx.put('counter', 'c', { n: 2 }, { expectedVersion: 1 });
      expect((await tx.append('counter/c', { n: 2 })).position).toBe(1);
    });
    await store.close();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      formatVersion: JSON_STORE_FORMAT_VERSION,
      journalThrough: 1,
      nextPosition: 2,
      log: [{ position: 0 }, { position: 1 }],
    });
    expect(await counterOf(file)).toEqual({ version: 2, n: 2, log: [1, 2] });
  },
);

test('a version 3 file whose positions run backwards, or whose nextPosition is behind its log, is refused untouched', async () => {
  const entry = (sequence: number, position: number) =>
    `{"stream":"s","sequence":${sequence},"position":${position},"data":{}}`;
  for (const [log, next] of [
    [`${entry(3, 5)},${entry(4, 4)}`, 6],
    [`${entry(3, 5)}`, 2],
  ] as const) {
    const file = freshFile();
    const text = `{"format":"coven-automata/json-store","formatVersion":3,"journalThrough":0,"nextPosition":${next},"records":{},"log":[${log}]}\n`;
    writeFileSync(file, text);
    await expect(JsonFileStore.open(file)).rejects.toBeInstanceOf(StoreCorruptError);
    expect(readFileSync(file, 'utf8')).toBe(text);
  }
});

test('retention in the journal: expired records and trimmed entries stay gone when a crash leaves only the journal', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await store.transact(async (tx) => {
    for (let n = 0; n < 3; n++) await tx.append('occurrence/o', { n });
    await tx.put('attempt', 'a', { state: 'failed' }, { expectedVersion: null, terminal: true });
  });
  await store.transact(async (tx) => {
    await tx.trimLog('occurrence/o', 2);
    await tx.expire('attempt', 'a', 1);
  });
  const files = { snapshot: readFileSync(file, 'utf8'), journal: readFileSync(journalOf(file), 'utf8') };
  expect(files.journal).toContain('"trims":[["occurrence/o",2]]');
  await store.close();
  writeFileSync(file, files.snapshot);
  writeFileSync(journalOf(file), files.journal);
  const again = await JsonFileStore.open(file);
  try {
    await again.read(async (r) => {
      expect(await r.get('attempt', 'a')).toBeUndefined();
      expect((await r.readLog('occurrence/o')).map((e) => [e.sequence, e.position])).toEqual([[2, 2]]);
    });
    expect((await again.transact((tx) => tx.append('occurrence/o', { n: 3 }, 3))).position).toBe(3);
  } finally {
    await again.close();
  }
});
