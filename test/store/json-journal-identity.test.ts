import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import { encodeGroup } from '../../src/store/json/journal-groups.js';
import { StoreCorruptError } from '../../src/store/store.js';

// The snapshot names the journal that must lie beside it (store id and generation); a journal that is
// missing, another store's, or of another generation is refused, never taken for "no commits since the fold".

const dir = mkdtempSync(join(tmpdir(), 'coven-json-identity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);
const journalOf = (file: string) => `${file}.journal`;

const put = (store: JsonFileStore, n: number) =>
  store.transact(async (tx) => {
    await tx.put('counter', 'c', { n }, { expectedVersion: n === 1 ? null : n - 1 });
    await tx.append('counter/c', { n });
  });

/** The files as a process killed now would leave them (the store is closed afterwards, and the copy put back). */
async function killedNow(store: JsonFileStore): Promise<{ snapshot: Buffer; journal: Buffer }> {
  const files = { snapshot: readFileSync(store.file), journal: readFileSync(journalOf(store.file)) };
  await store.close();
  writeFileSync(store.file, files.snapshot);
  writeFileSync(journalOf(store.file), files.journal);
  return files;
}

/** Asserts the open is refused as corrupt, for `reason`, with both files (or their absence) as they were. */
async function refusedUntouched(file: string, reason: RegExp): Promise<void> {
  const before = [file, journalOf(file)].map((f) => (existsSync(f) ? readFileSync(f) : undefined));
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toMatch(reason);
  const after = [file, journalOf(file)].map((f) => (existsSync(f) ? readFileSync(f) : undefined));
  expect(after).toEqual(before);
}

async function counterOf(file: string): Promise<number | undefined> {
  const store = await JsonFileStore.open(file);
  try {
    return (await store.read((r) => r.get<{ n: number }>('counter', 'c')))?.data.n;
  } finally {
    await store.close();
  }
}

test('a store killed with two acknowledged commits in its journal is refused when the journal is deleted, not opened without them', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await put(store, 2);
  await killedNow(store);
  rmSync(journalOf(file));
  await refusedUntouched(
    file,
    /the journal is missing, but the snapshot names generation 1 of store [0-9a-f-]+ beside it/,
  );
  // A folded store with nothing since its fold still needs its journal: the snapshot cannot tell.
  const folded = freshFile();
  const again = await JsonFileStore.open(folded);
  await put(again, 1);
  await again.close();
  rmSync(journalOf(folded));
  await refusedUntouched(folded, /the journal is missing/);
});

test('a journal from another store is refused, whether or not it holds commits', async () => {
  const [mine, theirs] = [freshFile(), freshFile()];
  for (const file of [mine, theirs]) {
    const store = await JsonFileStore.open(file);
    await put(store, 1);
    await killedNow(store);
  }
  copyFileSync(journalOf(theirs), journalOf(mine));
  await refusedUntouched(mine, /another store's/);
  const emptyOther = freshFile();
  await (await JsonFileStore.open(emptyOther)).close();
  copyFileSync(journalOf(emptyOther), journalOf(mine));
  await refusedUntouched(mine, /another store's/);
});

test('a journal of an older generation, or one that does not hold what the snapshot folded from it, is refused', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await put(store, 2);
  const generation1AtGroup2 = readFileSync(journalOf(file));
  await store.close(); // fold: snapshot and journal of generation 2
  const reopened = await JsonFileStore.open(file);
  await put(reopened, 3);
  await reopened.close(); // generation 3
  writeFileSync(journalOf(file), generation1AtGroup2);
  await refusedUntouched(
    file,
    /the journal is generation 1 of store [0-9a-f-]+, but the snapshot expects generation 3/,
  );
  // One generation behind is what a crash inside a fold leaves, but only if it still holds the fold's last group.
  const oneBehind = freshFile();
  const other = await JsonFileStore.open(oneBehind);
  await put(other, 1);
  const stale = readFileSync(journalOf(oneBehind));
  await put(other, 2);
  await other.close();
  writeFileSync(journalOf(oneBehind), stale);
  await refusedUntouched(oneBehind, /does not hold group 2 the snapshot folded from it/);
});

test('a snapshot rolled back to an older copy while its journal moved on is refused', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await store.close();
  const oldSnapshot = readFileSync(file);
  const reopened = await JsonFileStore.open(file);
  await put(reopened, 2);
  await reopened.close();
  const again = await JsonFileStore.open(file);
  await put(again, 3);
  await killedNow(again);
  writeFileSync(file, oldSnapshot);
  await refusedUntouched(
    file,
    /the journal is generation 3 of store [0-9a-f-]+, but the snapshot expects generation 2/,
  );
});

test("a crash between a fold's snapshot and its journal still opens with every commit", async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await put(store, 2);
  const { journal } = await killedNow(store);
  // The fold (open + close) wrote a snapshot of generation 2; put back the generation-1 journal it would
  // have cut, with one more group committed while the fold wrote.
  await (await JsonFileStore.open(file)).close();
  const third = encodeGroup(3, {
    records: [['counter', 'c', { kind: 'counter', id: 'c', version: 3, terminal: false, data: { n: 3 } }]],
    entries: [{ stream: 'counter/c', sequence: 2, position: 2, data: { n: 3 } }],
    trims: [],
  }).text;
  writeFileSync(journalOf(file), Buffer.concat([journal, Buffer.from(third)]));
  expect(await counterOf(file)).toBe(3);
  expect(await counterOf(file)).toBe(3);
});

test('a snapshot deleted beside its journal is refused, the journal untouched, unless the journal is a creation cut short', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await killedNow(store);
  rmSync(file);
  // The journal holds a commit.
  await refusedUntouched(file, /the snapshot is missing but its journal .* is there .*generation 1\)/);
  // A closed store: the commit folded into the snapshot, the journal holds only a header of generation 2.
  const folded = freshFile();
  const closed = await JsonFileStore.open(folded);
  await put(closed, 1);
  await closed.close();
  rmSync(folded);
  await refusedUntouched(folded, /the snapshot is missing .*generation 2\).*remove the journal too/);
  // Removing the journal as well starts a new, empty store.
  rmSync(journalOf(folded));
  expect(await counterOf(folded)).toBeUndefined();
  // A crash while creating a store leaves its journal (a header of generation 1, no commits) and no snapshot.
  const created = freshFile();
  await (await JsonFileStore.open(created)).close();
  const fresh = freshFile();
  const header = readFileSync(journalOf(created), 'utf8');
  expect(header).toMatch(/"generation":1,"checksums":"crc32"\}\n$/);
  writeFileSync(journalOf(fresh), header);
  const store2 = await JsonFileStore.open(fresh);
  await put(store2, 1);
  await store2.close();
  expect(await counterOf(fresh)).toBe(1);
});

test("a format-5 store (journal without a header) opens with its journal's commits and is upgraded on its next fold", async () => {
  const file = freshFile();
  writeFileSync(
    file,
    `{"format":"coven-automata/json-store","formatVersion":5,"journalThrough":0,"nextPosition":0,"records":{\n},\n"log":[\n]}\n`,
  );
  writeFileSync(
    journalOf(file),
    `{"seq":1,"records":[["counter","c",1,false,{"n":1}]],"log":[["counter/c",0,{"n":1}]]}\n`,
  );
  expect(await counterOf(file)).toBe(1);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
    formatVersion: 6,
    journalGeneration: 1,
    journalThrough: 1,
  });
  expect(readFileSync(journalOf(file), 'utf8')).toMatch(
    /^\{"journal":"coven-automata\/json-journal","storeId":"[0-9a-f-]+","generation":1,"checksums":"crc32"\}\n$/,
  );
  const store = await JsonFileStore.open(file);
  await put(store, 2);
  await killedNow(store);
  rmSync(journalOf(file));
  await refusedUntouched(file, /the journal is missing/);
});

test('a journal written before group checksums (a header without them) opens with its commits and is folded at once; a header with an unknown field is refused', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await put(store, 1);
  await killedNow(store);
  // The same journal as the build before group checksums wrote it.
  const journal = readFileSync(journalOf(file), 'utf8');
  const old = journal.replace(',"checksums":"crc32"}', '}').replace(/\{"crc32":"[0-9a-f]{8}",/g, '{');
  expect(old).toMatch(/"generation":1\}\n\{"seq":1,/);
  writeFileSync(journalOf(file), old);
  const opened = await JsonFileStore.open(file);
  // Folded by the open: the journal on disk is this build's, with nothing in it yet.
  expect(readFileSync(journalOf(file), 'utf8')).toMatch(/^\{"journal":.*"generation":2,"checksums":"crc32"\}\n$/);
  await put(opened, 2);
  await opened.close();
  expect(await counterOf(file)).toBe(2);
  const current = readFileSync(journalOf(file), 'utf8');
  writeFileSync(journalOf(file), current.replace(',"checksums":"crc32"}', ',"checksums":"crc32","x":1}'));
  await refusedUntouched(file, /its first line is not a well-formed journal header/);
});
