import { CommittedState } from './layered-state.js';
import type { LogEntry, StoredRecord } from './store.js';

/** Identifies a coven-automata JSON store file; anything else is refused rather than overwritten. */
export const JSON_STORE_FORMAT = 'coven-automata/json-store';
/**
 * 2 adds `journalThrough`: the last journal group the snapshot holds. 3 adds each log entry's `position` and
 * `nextPosition`, because retention trims leave gaps in positions and streams that start past sequence 0.
 * Version 1 and 2 files still open (their positions are their indexes).
 */
export const JSON_STORE_FORMAT_VERSION = 3;
const READABLE_VERSIONS = new Set([1, 2, 3]);

// Records and log entries are immutable once written, so each one's encoded JSON is made once and reused
// by every later whole-file write: a commit encodes only what it changed, then writes cached bytes.
const encoded = new WeakMap<object, Buffer>();

function cachedBytes(value: object, make: () => string): Buffer {
  let bytes = encoded.get(value);
  if (bytes === undefined) {
    bytes = Buffer.from(make(), 'utf8');
    encoded.set(value, bytes);
  }
  return bytes;
}

const COMMA_NEWLINE = Buffer.from(',\n');
const NEWLINE = Buffer.from('\n');

/**
 * The file content for a state, as a list of byte chunks to write in order: one line per record and
 * per log entry, records in storage order, log entries in commit order.
 */
export function serializeState(state: CommittedState, journalThrough: number): Buffer[] {
  const chunks: Buffer[] = [
    Buffer.from(
      `{"format":${JSON.stringify(JSON_STORE_FORMAT)},"formatVersion":${JSON_STORE_FORMAT_VERSION},"journalThrough":${journalThrough},"nextPosition":${state.nextPosition()},"records":{`,
    ),
  ];
  state.kinds().forEach((kind, k) => {
    chunks.push(Buffer.from(`${k === 0 ? '' : ','}\n${JSON.stringify(kind)}:{`));
    let first = true;
    for (const r of state.recordsOf(kind)) {
      chunks.push(first ? NEWLINE : COMMA_NEWLINE);
      chunks.push(cachedBytes(r, () => `${JSON.stringify(r.id)}:${JSON.stringify({ version: r.version, terminal: r.terminal, data: r.data })}`));
      first = false;
    }
    chunks.push(Buffer.from('}'));
  });
  chunks.push(Buffer.from('},\n"log":['));
  let first = true;
  for (const e of state.retainedFeed()) {
    chunks.push(first ? NEWLINE : COMMA_NEWLINE);
    chunks.push(cachedBytes(e, () => JSON.stringify({ stream: e.stream, sequence: e.sequence, position: e.position, data: e.data })));
    first = false;
  }
  chunks.push(Buffer.from(']}\n'));
  return chunks;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses and checks a store file. Throws a plain Error whose message says what is wrong; the caller
 * turns it into a StoreCorruptError that names the file.
 */
export function parseState(text: string): { state: CommittedState; journalThrough: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message}); the file may be truncated`);
  }
  if (!isObject(doc) || doc.format !== JSON_STORE_FORMAT) throw new Error(`not a ${JSON_STORE_FORMAT} file`);
  if (!READABLE_VERSIONS.has(doc.formatVersion as number)) {
    throw new Error(`format version ${JSON.stringify(doc.formatVersion)} is not supported (this build reads ${[...READABLE_VERSIONS].join(' and ')})`);
  }
  const journalThrough = doc.formatVersion === 1 ? 0 : doc.journalThrough;
  if (!Number.isSafeInteger(journalThrough) || (journalThrough as number) < 0) throw new Error('journalThrough is missing or not a count');
  if (!isObject(doc.records) || !Array.isArray(doc.log)) throw new Error('records or log section missing');
  const state = new CommittedState();
  for (const [kind, byId] of Object.entries(doc.records)) {
    if (!isObject(byId)) throw new Error(`records.${kind} is not an object`);
    for (const [id, raw] of Object.entries(byId)) {
      if (!isObject(raw) || !Number.isSafeInteger(raw.version) || (raw.version as number) < 1 || typeof raw.terminal !== 'boolean' || !('data' in raw)) {
        throw new Error(`record ${kind}/${id} is malformed`);
      }
      const record: StoredRecord = { kind, id, version: raw.version as number, terminal: raw.terminal, data: raw.data };
      state.loadRecord(record);
    }
  }
  const positioned = doc.formatVersion === 3;
  doc.log.forEach((raw: unknown, index) => {
    if (!isObject(raw) || typeof raw.stream !== 'string' || !('data' in raw)) throw new Error(`log entry ${index} is malformed`);
    const position = positioned ? raw.position : index;
    if (!Number.isSafeInteger(position) || (position as number) < state.nextPosition()) throw new Error(`log entry ${index} has position ${String(position)}, not after the one before it`);
    // Retention trims a stream's oldest entries, so (from format 3) a stream's first entry may be past 0.
    const retained = state.streamEntries(raw.stream).length > 0;
    const expected = state.streamHead(raw.stream);
    const sequenceOk = retained || !positioned ? raw.sequence === expected : Number.isSafeInteger(raw.sequence) && (raw.sequence as number) >= 0;
    if (!sequenceOk) throw new Error(`log entry ${index} has sequence ${String(raw.sequence)} where stream ${raw.stream} expects ${expected}`);
    const entry: LogEntry = { stream: raw.stream, sequence: raw.sequence as number, position: position as number, data: raw.data };
    state.loadEntry(entry);
  });
  if (positioned) {
    if (!Number.isSafeInteger(doc.nextPosition) || (doc.nextPosition as number) < state.nextPosition()) throw new Error('nextPosition is missing or behind the log');
    state.advancePositions(doc.nextPosition as number);
  }
  return { state, journalThrough: journalThrough as number };
}
