import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, test } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import { StoreCorruptError, type StoreReader } from '../../src/store/store.js';
import { propertySeed } from '../support/property.js';

// Random bit flips over the journal of a store killed after acknowledged commits (issue 36: 61 of 130 flips
// were served as changed data). Every flip must be refused naming the journal and the damaged group's byte
// offset, or be provably harmless (it fell in the torn tail, a write the crash cut short), never served.

const dir = mkdtempSync(join(tmpdir(), 'coven-json-flips-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);
const journalOf = (file: string) => `${file}.journal`;

const definition = (revision: number, hour: number) => ({
  automationId: 'daily-notes',
  revision,
  action: { kind: 'prompt', prompt: 'Write the daily reflection — résumé of the day 🦀.' },
  trigger: { kind: 'schedule', rrule: `FREQ=DAILY;BYHOUR=${hour}` },
});

/** Acknowledged groups after a fold: a definition revised, occurrences, a sealed run, log entries. */
async function commitGroups(store: JsonFileStore): Promise<void> {
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(2, 9), { expectedVersion: 1 }));
  for (let i = 0; i < 3; i++) {
    await store.transact(async (tx) => {
      await tx.put(
        'occurrence',
        `occ-${i}`,
        { scheduledFor: `2026-03-0${i + 1}T09:00:00.000Z` },
        { expectedVersion: null },
      );
      await tx.append('automation/daily-notes', { kind: 'occurrence.planned', occurrenceId: `occ-${i}` });
    });
  }
  await store.transact(async (tx) => {
    await tx.put('run', 'run-0', { value: 'succeeded', exitCode: 0 }, { expectedVersion: null, terminal: true });
    await tx.append('automation/daily-notes', { kind: 'run.succeeded', runId: 'run-0' });
  });
}

/**
 * The snapshot and journal a process killed after {@link commitGroups} leaves, plus the torn start of a
 * group it was writing when killed (never acknowledged). Returns the bytes and where the torn tail begins.
 */
async function crashImage(): Promise<{ snapshot: Buffer; journal: Buffer; tornAt: number }> {
  const file = freshFile();
  const first = await JsonFileStore.open(file);
  await first.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 8), { expectedVersion: null }));
  await first.close();
  const store = await JsonFileStore.open(file);
  await commitGroups(store);
  const snapshot = readFileSync(file);
  const acknowledged = readFileSync(journalOf(file));
  await store.close();
  const torn = Buffer.from('{"crc32":"0badf00d","seq":6,"records":[["occurrence","occ-9",1,false,{"sched');
  return { snapshot, journal: Buffer.concat([acknowledged, torn]), tornAt: acknowledged.length };
}

async function readEverything(r: StoreReader): Promise<string> {
  const out: unknown[] = [];
  for (const kind of ['definition', 'occurrence', 'run']) out.push(await r.list(kind), await r.versions(kind));
  for (const [kind, id] of [
    ['definition', 'daily-notes'],
    ['run', 'run-0'],
    ['occurrence', 'occ-2'],
  ] as const)
    out.push(await r.get(kind, id));
  out.push(await r.readLog('automation/daily-notes'), await r.readFeed({ after: -1 }));
  return JSON.stringify(out);
}

type Outcome = 'refused at open' | 'refused at read' | 'harmless' | 'changed data served';

async function openAndRead(file: string, committed: string): Promise<Outcome> {
  let store: JsonFileStore;
  try {
    store = await JsonFileStore.open(file);
  } catch (error) {
    if (error instanceof StoreCorruptError) return 'refused at open';
    throw error;
  }
  try {
    return (await store.read(readEverything)) === committed ? 'harmless' : 'changed data served';
  } catch (error) {
    if (error instanceof StoreCorruptError) return 'refused at read';
    throw error;
  } finally {
    await store.close().catch(() => undefined);
  }
}

test("a bit flipped anywhere in a killed store's journal is refused naming the journal and offset, or harmless (torn tail); never served as changed", async () => {
  const image = await crashImage();
  const reference = freshFile();
  writeFileSync(reference, image.snapshot);
  writeFileSync(journalOf(reference), image.journal);
  const committedStore = await JsonFileStore.open(reference);
  const committed = await committedStore.read(readEverything);
  await committedStore.close();
  expect(committed).toContain('BYHOUR=9');

  const flips = process.env.COVEN_STRESS === '1' ? 2_000 : 130;
  if (flips < 2_000) console.info('[json journal bit flips] 130 flips; COVEN_STRESS=1 runs 2,000');
  const seed = propertySeed('json journal bit flips');
  const bits = fc.sample(fc.integer({ min: 0, max: image.journal.length * 8 - 1 }), { seed, numRuns: flips });
  const counts: Record<string, number> = {};
  const served: number[] = [];
  const headerBytes = image.journal.indexOf('\n') + 1;
  for (const bit of bits) {
    const file = freshFile();
    const journal = Buffer.from(image.journal);
    journal[bit >> 3]! ^= 1 << (bit & 7);
    writeFileSync(file, image.snapshot);
    writeFileSync(journalOf(file), journal);
    const outcome = await openAndRead(file, committed);
    const key = outcome === 'harmless' && bit >> 3 >= image.tornAt ? 'harmless (torn tail)' : outcome;
    counts[key] = (counts[key] ?? 0) + 1;
    if (outcome === 'changed data served' || (outcome === 'harmless' && bit >> 3 < image.tornAt)) served.push(bit);
    if (outcome === 'refused at open') {
      const error = (await JsonFileStore.open(file).catch((e: unknown) => e)) as StoreCorruptError;
      expect(error.message).toContain(journalOf(file));
      // Past the header, the refusal names the damaged group's line: it begins at or before the flipped byte.
      if (bit >> 3 >= headerBytes) expect(error.details?.offset).toBeLessThanOrEqual(bit >> 3);
      expect(readFileSync(journalOf(file))).toEqual(journal);
    }
    rmSync(file, { force: true });
    rmSync(journalOf(file), { force: true });
  }
  console.info(
    `[json journal bit flips] ${flips} flips in a ${image.journal.length}-byte journal: ${JSON.stringify(counts)}`,
  );
  expect(counts['changed data served'] ?? 0).toBe(0);
  // A flip in an acknowledged byte that opened as if nothing changed would have to be a no-op; none is.
  expect(served).toEqual([]);
}, 600_000);

test('a deleted snapshot beside a journal that proves one existed is refused, the journal left byte for byte', async () => {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await store.transact((tx) => tx.put('definition', 'daily-notes', definition(1, 9), { expectedVersion: null }));
  await store.close();
  // Closed: the definition is folded into the snapshot; the journal holds only its header (generation 2).
  const journal = readFileSync(journalOf(file));
  expect(journal.toString()).toMatch(/"generation":2/);
  rmSync(file);
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toContain(file);
  expect(readFileSync(journalOf(file))).toEqual(journal);
  expect(existsSync(file)).toBe(false);
});

test("a snapshot whose journalThrough was changed upward is refused, not taken as holding the journal's first groups", async () => {
  const image = await crashImage();
  const file = freshFile();
  const snapshot = image.snapshot.toString();
  expect(snapshot).toContain('"journalThrough":1,');
  writeFileSync(file, snapshot.replace('"journalThrough":1,', '"journalThrough":3,'));
  writeFileSync(journalOf(file), image.journal);
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toMatch(/is group 2, but the snapshot says it holds every group through 3/);
  expect(readFileSync(journalOf(file))).toEqual(image.journal);
});
