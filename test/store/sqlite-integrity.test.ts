import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, expect, test } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { StoreCorruptError, StoreReadOnlyError, type StoreReader } from '../../src/store/store.js';
import { propertySeed } from '../support/property.js';
import { SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-open.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-sqlite-integrity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const fresh = (name: string) => join(dir, `${counter++}-${name}`);

const KINDS = ['definition', 'occurrence', 'run', 'attempt'];
const STREAMS = ['automation/daily-notes', 'occurrence/occ-0', 'occurrence/occ-1'];

/** A store with real records: the definition whose prompt the issue saw changed, occurrences, runs, attempts, events. */
async function realStore(file: string): Promise<void> {
  const store = await SqliteStore.open(file);
  await store.transact(async (tx) => {
    await tx.put(
      'definition',
      'daily-notes',
      {
        automationId: 'daily-notes',
        revision: 1,
        action: { kind: 'prompt', prompt: 'Write the daily reflection.' },
        trigger: { kind: 'schedule', rrule: 'FREQ=DAILY;BYHOUR=9' },
      },
      { expectedVersion: null },
    );
    for (let i = 0; i < 12; i++) {
      await tx.put(
        'occurrence',
        `occ-${i}`,
        {
          snapshot: {
            value: 'planned',
            context: {
              occurrenceId: `occ-${i}`,
              scheduledFor: `2026-03-${String(i + 1).padStart(2, '0')}T09:00:00.000Z`,
              note: 'x'.repeat(300),
            },
          },
        },
        { expectedVersion: null },
      );
    }
    for (let i = 0; i < 4; i++) {
      await tx.put(
        'run',
        `run-${i}`,
        { snapshot: { value: 'succeeded', context: { occurrenceId: `occ-${i}`, fenceGeneration: 1 } } },
        { expectedVersion: null, terminal: true },
      );
      await tx.put(
        'attempt',
        `att-${i}`,
        { snapshot: { value: 'succeeded', context: { sessionId: `session-${i}`, exitCode: 0 } } },
        { expectedVersion: null, terminal: true },
      );
    }
    for (let i = 0; i < 10; i++)
      await tx.append(STREAMS[i % STREAMS.length]!, {
        kind: 'occurrence.planned',
        sequence: i,
        at: '2026-03-01T09:00:00.000Z',
      });
  });
  await store.transact((tx) =>
    tx.put(
      'definition',
      'daily-notes',
      { automationId: 'daily-notes', revision: 2, action: { kind: 'prompt', prompt: 'Write the daily reflection.' } },
      { expectedVersion: 1 },
    ),
  );
  await store.close();
}

/**
 * Everything a reader can be asked, in order, each answer handed to `served` as plain data the moment it is
 * served: what a flipped file must serve unchanged or refuse.
 */
async function readEverything(reader: StoreReader, served: (key: string, value: unknown) => void): Promise<void> {
  const serve = (key: string, value: unknown) => served(key, JSON.parse(JSON.stringify(value ?? null)));
  for (const kind of KINDS) {
    const records = await reader.list(kind);
    serve(`list ${kind}`, records);
    serve(`versions ${kind}`, await reader.versions(kind));
    for (const r of records) {
      serve(`get ${kind}/${r.id}`, await reader.get(kind, r.id));
      serve(`version ${kind}/${r.id}`, await reader.version(kind, r.id));
    }
  }
  for (let i = 0; i < 12; i++) serve(`get occ-${i}`, await reader.get('occurrence', `occ-${i}`));
  serve('get daily-notes', await reader.get('definition', 'daily-notes'));
  serve('version daily-notes', await reader.version('definition', 'daily-notes'));
  for (const stream of STREAMS) {
    serve(`log ${stream}`, await reader.readLog(stream));
    serve(`head ${stream}`, await reader.head(stream));
  }
  serve('feed', await reader.readFeed());
}

type Outcome = 'refused at open' | 'refused at read' | 'harmless' | 'changed data served';

/**
 * Opens a copy of `original` with one bit flipped and reads everything back, comparing each answer as it is
 * served: a refusal after a changed answer still counts as changed data served.
 */
async function flipAndRead(original: Buffer, committed: Map<string, string>, bit: number): Promise<Outcome> {
  const file = fresh('flipped.sqlite');
  const bytes = Buffer.from(original);
  bytes[bit >> 3]! ^= 1 << (bit & 7);
  writeFileSync(file, bytes);
  let store: SqliteStore;
  try {
    store = await SqliteStore.open(file);
  } catch (error) {
    if (error instanceof StoreCorruptError) return 'refused at open';
    throw error;
  }
  let changed = false;
  try {
    await store.read((r) =>
      readEverything(r, (key, value) => void (changed ||= JSON.stringify(value) !== committed.get(key))),
    );
    return changed ? 'changed data served' : 'harmless';
  } catch (error) {
    if (changed) return 'changed data served';
    if (error instanceof StoreCorruptError) return 'refused at read';
    throw error;
  } finally {
    await store.close();
  }
}

test('a bit flipped anywhere in a closed store is refused (at open or at the read) or provably harmless, never served as changed data', async () => {
  const file = fresh('real.sqlite');
  await realStore(file);
  const store = await SqliteStore.open(file);
  const committed = new Map<string, string>();
  await store.read((r) => readEverything(r, (key, value) => void committed.set(key, JSON.stringify(value))));
  await store.close();
  expect(committed.get('get daily-notes')).toContain('Write the daily reflection.');
  const original = readFileSync(file);
  const flips = process.env.COVEN_STRESS === '1' ? 2_000 : 120;
  if (flips < 2_000) console.info('[sqlite bit flips] 120 flips; COVEN_STRESS=1 runs 2,000');
  const seed = propertySeed('sqlite bit flips');
  const bits = fc.sample(fc.integer({ min: 0, max: original.length * 8 - 1 }), { seed, numRuns: flips });
  const outcomes = new Map<Outcome, number[]>();
  for (const bit of bits) {
    const outcome = await flipAndRead(original, committed, bit);
    outcomes.set(outcome, [...(outcomes.get(outcome) ?? []), bit]);
  }
  const counts = Object.fromEntries([...outcomes].map(([k, v]) => [k, v.length]));
  console.info(`[sqlite bit flips] ${flips} flips in a ${original.length}-byte store: ${JSON.stringify(counts)}`);
  expect(outcomes.get('changed data served') ?? []).toEqual([]);
  expect(
    (outcomes.get('refused at open')?.length ?? 0) + (outcomes.get('refused at read')?.length ?? 0),
  ).toBeGreaterThan(0);
}, 120_000);

/** The folder's names besides the lock's (which another part of the store keeps). */
const sidecarsOf = (file: string) =>
  readdirSync(dirname(file))
    .filter((name) => name.startsWith(basename(file)) && !/\.(lock|owner)$/.test(name))
    .sort();

/** Asserts an open of `file` is refused as `kind` with the file's bytes and mtime unchanged and no file added beside it. */
async function refusedUntouched(
  file: string,
  kind: typeof StoreCorruptError | typeof StoreReadOnlyError,
  reason: RegExp,
): Promise<void> {
  const past = new Date('2026-01-01T00:00:00Z');
  utimesSync(file, past, past);
  const bytes = readFileSync(file);
  const before = sidecarsOf(file);
  const refusal = await SqliteStore.open(file).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refusal).toBeInstanceOf(kind);
  expect((refusal as Error).message).toMatch(reason);
  expect(readFileSync(file).equals(bytes)).toBe(true);
  expect(statSync(file).mtimeMs).toBe(past.getTime());
  expect(sidecarsOf(file)).toEqual(before);
}

test('a 0-byte file, a file of another format and a truncated store are refused untouched, with no -wal or -shm left behind', async () => {
  const empty = fresh('empty.sqlite');
  writeFileSync(empty, '');
  await refusedUntouched(empty, StoreCorruptError, /empty \(0 bytes\)/);
  const text = fresh('text.sqlite');
  writeFileSync(text, 'not a database at all, but longer than one hundred bytes '.repeat(4));
  await refusedUntouched(text, StoreCorruptError, /not an SQLite database/);
  const truncated = fresh('truncated.sqlite');
  await realStore(truncated);
  truncateSync(truncated, statSync(truncated).size - 2048);
  await refusedUntouched(truncated, StoreCorruptError, /truncated/);
  const halfPage = fresh('half-page.sqlite');
  await realStore(halfPage);
  truncateSync(halfPage, statSync(halfPage).size - 100);
  await refusedUntouched(halfPage, StoreCorruptError, /whole number of 2048-byte pages/);
});

test('a foreign SQLite database and a store of a newer schema are refused untouched, in WAL mode or not', async () => {
  const foreign = fresh('foreign.sqlite');
  const other = new Database(foreign);
  other.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');");
  other.close();
  await refusedUntouched(foreign, StoreCorruptError, /not a coven-automata SQLite store/);
  const newer = fresh('newer.sqlite');
  await realStore(newer);
  const db = new Database(newer);
  db.prepare("UPDATE meta SET value = ? WHERE key = 'schemaVersion'").run(String(SCHEMA_VERSION + 1));
  db.close();
  await refusedUntouched(newer, StoreCorruptError, new RegExp(`schema version ${SCHEMA_VERSION + 1} is not supported`));
});

test("a store SQLite's integrity check finds broken is refused at open, untouched", async () => {
  const file = fresh('broken-index.sqlite');
  await realStore(file);
  // An index entry that no longer matches its row: the row checksums cannot see it, the integrity check does.
  const db = new Database(file);
  db.pragma('writable_schema = ON');
  const rootpage = db
    .prepare("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_records_1'")
    .pluck()
    .get() as number;
  db.close();
  const bytes = readFileSync(file);
  const page = bytes.subarray((rootpage - 1) * 2048, rootpage * 2048);
  const at = page.indexOf('occ-5');
  expect(at).toBeGreaterThan(0);
  page[at + 4] = '9'.charCodeAt(0);
  writeFileSync(file, bytes);
  await refusedUntouched(file, StoreCorruptError, /integrity check failed/);
});

test('a store of schema version 1 gets its checksums on open, and is refused as changed after a byte of a value changes', async () => {
  const file = fresh('v1.sqlite');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (kind TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, terminal INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (kind, id));
    CREATE TABLE log (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, sequence INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (stream, sequence));
    INSERT INTO meta VALUES ('schemaVersion', '1');
    INSERT INTO records VALUES ('definition', 'daily-notes', 3, 0, '{"prompt":"Write the daily reflection."}');
    INSERT INTO log VALUES (0, 'automation/daily-notes', 0, '{"kind":"definition.created"}');`);
  db.close();
  const store = await SqliteStore.open(file);
  expect(await store.read((r) => r.get('definition', 'daily-notes'))).toMatchObject({
    version: 3,
    data: { prompt: 'Write the daily reflection.' },
  });
  expect((await store.read((r) => r.readFeed())).map((e) => e.data)).toEqual([{ kind: 'definition.created' }]);
  await store.close();
  const check = new Database(file, { readonly: true });
  expect(check.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").pluck().get()).toBe(
    String(SCHEMA_VERSION),
  );
  check.close();
  const bytes = readFileSync(file);
  const at = bytes.indexOf('Write the daily');
  bytes[at + 6] = 'u'.charCodeAt(0);
  writeFileSync(file, bytes);
  const reopened = await SqliteStore.open(file);
  await expect(reopened.read((r) => r.get('definition', 'daily-notes'))).rejects.toThrow(
    /record definition\/daily-notes does not match its checksum/,
  );
  await expect(reopened.transact((tx) => tx.get('definition', 'daily-notes'))).rejects.toBeInstanceOf(
    StoreCorruptError,
  );
  await reopened.close();
});

test('a read-only store file is refused for writing, naming the file, and left as it is', async () => {
  const file = fresh('read-only.sqlite');
  await realStore(file);
  chmodSync(file, 0o400);
  try {
    await refusedUntouched(file, StoreReadOnlyError, /is not writable \(its mode is 0400/);
    expect(statSync(file).mode & 0o777).toBe(0o400);
  } finally {
    chmodSync(file, 0o600);
  }
});
