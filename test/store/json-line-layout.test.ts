import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, test, vi } from 'vitest';
import { fileLines } from '../../src/store/json/file-lines.js';
import {
  JSON_STORE_FORMAT_VERSION,
  loadLines,
  parseState,
  type ParsedState,
} from '../../src/store/json/json-document.js';
import { serializeState } from '../../src/store/json/snapshot-writer.js';
import type { HistoryFile } from '../../src/store/json/cold-history.js';
import { CommittedState } from '../../src/store/layered-state.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { StoreCorruptError } from '../../src/store/store.js';
import { propertyParameters } from '../support/property.js';

// Format 4 puts every record, log entry and closing bracket on a line of its own, so a store file loads line
// by line instead of as one string (a 195 MB file peaked at 691 MB RSS read whole, 404 MB by lines). These
// tests hold the layout, the chunked line reader, and the whole-file fallback for anything laid out otherwise.

const dir = mkdtempSync(join(tmpdir(), 'coven-json-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);

async function linesOf(file: string, chunkBytes?: number): Promise<string[]> {
  return (await readLines(file, chunkBytes)).lines;
}

async function readLines(
  file: string,
  chunkBytes?: number,
): Promise<{ lines: string[]; bytes: number[]; unterminated: boolean }> {
  const handle = await open(file, 'r');
  try {
    const out = { lines: [] as string[], bytes: [] as number[], unterminated: false };
    for await (const batch of fileLines(handle, chunkBytes)) {
      out.lines.push(...batch.lines);
      out.bytes.push(...batch.bytes);
      out.unterminated = batch.unterminated === true;
    }
    return out;
  } finally {
    await handle.close();
  }
}

/** Everything a state holds, in a comparable shape. */
function contents({ state, journalThrough }: ParsedState) {
  return {
    journalThrough,
    nextPosition: state.nextPosition(),
    records: state.kinds().map((kind) => [kind, [...state.recordsOf(kind)]]),
    log: [...state.retainedFeed()],
  };
}

/** A closed store with several kinds, unicode, a deleted record, an expired one and a trimmed stream. */
async function populatedStore(): Promise<string> {
  const file = freshFile();
  const store = await JsonFileStore.open(file);
  await store.transact(async (tx) => {
    await tx.put('definition', 'a', { name: 'nightly €', note: 'line\nbreak "quoted" 🦀' }, { expectedVersion: null });
    await tx.put('definition', 'b', { name: 'b' }, { expectedVersion: null });
    await tx.put('occurrence', 'o-1', { state: 'succeeded' }, { expectedVersion: null, terminal: true });
    await tx.put('scratch', 'gone', {}, { expectedVersion: null });
    for (let n = 0; n < 4; n++) await tx.append('occurrence/o-1', { n, text: 'ünïcödé' });
    await tx.append('automation/a', { kind: 'definition.created' });
  });
  await store.transact(async (tx) => {
    await tx.delete('scratch', 'gone', 1);
    await tx.trimLog('occurrence/o-1', 3);
  });
  await store.close();
  return file;
}

test('a store file is written line by line and loads by lines into exactly what a whole-file parse gives', async () => {
  const file = await populatedStore();
  const text = readFileSync(file, 'utf8');
  expect(JSON.parse(text)).toMatchObject({ formatVersion: JSON_STORE_FORMAT_VERSION });
  const lines = text.split('\n');
  // Header, then one item or bracket per line: no line holds two records or a record and a bracket.
  expect(lines[0]).toMatch(/"records":\{$/);
  expect(lines.filter((l) => l.startsWith('"definition":{') || l.startsWith('"occurrence":{'))).toHaveLength(2);
  expect(lines).toContain('"log":[');
  expect(lines.at(-2)).toBe(']}');
  for (const line of lines.slice(1))
    expect(line.length === 0 || /^(\}|\},|\]\}|"log":\[|"[^"]+":\{|"[^"]+":\{".*\}\}?,?|\{.*\},?)$/.test(line)).toBe(
      true,
    );

  const byLines = await loadLines([{ lines }]);
  expect(contents(byLines)).toEqual(contents(parseState(text)));
  expect(contents(byLines).log.map((e) => e.sequence)).toEqual([3, 0]);
  // And through the chunked reader with chunks far smaller than a line.
  expect(contents(await loadLines([{ lines: await linesOf(file, 7) }]))).toEqual(contents(byLines));
});

test('opening a version-4 store never parses the file as one string (the line loader is what opens it)', async () => {
  const file = await populatedStore();
  const size = readFileSync(file, 'utf8').length;
  const parse = vi.spyOn(JSON, 'parse');
  try {
    const store = await JsonFileStore.open(file);
    await store.close();
    const longest = Math.max(...parse.mock.calls.map(([text]) => String(text).length));
    expect(parse.mock.calls.length).toBeGreaterThan(5);
    expect(longest).toBeLessThan(size / 2);
  } finally {
    parse.mockRestore();
  }
});

test('the chunked line reader gives the same lines (and byte lengths) as splitting the whole text, for any chunk size and any UTF-8', async () => {
  const file = freshFile();
  const line = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replaceAll('\n', ''));
  await fc.assert(
    fc.asyncProperty(
      fc.array(line, { maxLength: 12 }),
      fc.boolean(),
      fc.integer({ min: 1, max: 64 }),
      async (lines, trailingNewline, chunkBytes) => {
        const text = lines.join('\n') + (trailingNewline ? '\n' : '');
        writeFileSync(file, text);
        const expected = text.split('\n');
        if (expected.at(-1) === '') expected.pop();
        expect(await readLines(file, chunkBytes)).toEqual({
          lines: expected,
          bytes: expected.map((l) => Buffer.byteLength(l)),
          unterminated: text.length > 0 && !text.endsWith('\n'),
        });
      },
    ),
    propertyParameters('chunked lines = split lines', 300),
  );
});

test('a version-4 file laid out otherwise (pretty-printed by hand) still opens, parsed whole', async () => {
  const file = await populatedStore();
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, JSON.stringify(JSON.parse(text), null, 2));
  const store = await JsonFileStore.open(file);
  try {
    expect((await store.read((r) => r.get<{ note: string }>('definition', 'a')))?.data.note).toBe(
      'line\nbreak "quoted" 🦀',
    );
    expect((await store.read((r) => r.readLog('occurrence/o-1'))).map((e) => e.sequence)).toEqual([3]);
  } finally {
    await store.close();
  }
});

test('a version-4 file cut short anywhere, even at a line boundary, is refused and left byte-identical', async () => {
  const file = await populatedStore();
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const cuts = [
    lines.slice(0, 4).join('\n') + '\n',
    lines.slice(0, -3).join('\n') + '\n',
    text.slice(0, text.length - 40),
  ];
  for (const cut of cuts) {
    writeFileSync(file, cut);
    const error = await JsonFileStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreCorruptError);
    expect((error as Error).message).toContain('truncated');
    expect(readFileSync(file, 'utf8')).toBe(cut);
  }
});

test('a line-laid-out file that fails a check is refused with that check', async () => {
  const file = await populatedStore();
  const text = readFileSync(file, 'utf8').replace('"b":{"version":1,', '"b":{"version":0,');
  writeFileSync(file, text);
  const error = await JsonFileStore.open(file).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as Error).message).toContain('record definition/b is malformed');
  expect(readFileSync(file, 'utf8')).toBe(text);
});

test('a fold encodes the state a piece at a time as the file takes it, so no encoded copy of the whole state exists', () => {
  const state = new CommittedState<HistoryFile>();
  const encoded = new Set<number>();
  // A getter stands in for the record's data being stringified.
  const record = (n: number) => ({
    kind: 'occurrence',
    id: `o-${String(n).padStart(5, '0')}`,
    version: 1,
    terminal: true,
    data: {
      get note() {
        encoded.add(n);
        return 'x'.repeat(1000);
      },
    },
  });
  for (let n = 0; n < 3000; n++) state.loadRecord(record(n));
  encoded.clear(); // loading froze (and so read) every record
  const pieces = serializeState(state, 7, { storeId: 'layout-test', generation: 1 });
  const first = pieces.next();
  expect(first.done).toBe(false);
  // About 256 KiB of text per piece: the first piece encoded about 250 records, not all three thousand.
  expect(encoded.size).toBeGreaterThan(220);
  expect(encoded.size).toBeLessThan(280);
  const rest = [...pieces];
  expect(encoded.size).toBe(3000);
  const text = Buffer.concat([first.value as Buffer, ...rest]).toString('utf8');
  expect(contents(parseState(text)).records).toEqual([
    ['occurrence', [...state.recordsOf('occurrence')].map((r) => ({ ...r, data: { note: 'x'.repeat(1000) } }))],
  ]);
});
