import { CommittedState, type StateLayer } from './layered-state.js';
import type { LogEntry, StoredRecord } from './store.js';

/** Identifies a coven-automata JSON store file; anything else is refused rather than overwritten. */
export const JSON_STORE_FORMAT = 'coven-automata/json-store';
export const JSON_STORE_FORMAT_VERSION = 1;

// Records and log entries are immutable once written, so their JSON text is computed once and reused by
// every later whole-file write; only what changed is stringified again.
const serialized = new WeakMap<object, string>();

function cachedJson(value: object, make: () => unknown): string {
  let text = serialized.get(value);
  if (text === undefined) {
    text = JSON.stringify(make());
    serialized.set(value, text);
  }
  return text;
}

/** The file text for a state: one line per record and per log entry, in a stable order. */
export function serializeState(state: StateLayer): string {
  const parts: string[] = [`{"format":${JSON.stringify(JSON_STORE_FORMAT)},"formatVersion":${JSON_STORE_FORMAT_VERSION},"records":{`];
  const kinds = state.kinds().sort();
  kinds.forEach((kind, k) => {
    const records = state.listRecords(kind).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    parts.push(`${k === 0 ? '' : ','}\n${JSON.stringify(kind)}:{`);
    records.forEach((r, i) => {
      parts.push(`${i === 0 ? '' : ','}\n${JSON.stringify(r.id)}:`, cachedJson(r, () => ({ version: r.version, terminal: r.terminal, data: r.data })));
    });
    parts.push('}');
  });
  parts.push('},\n"log":[');
  state.feedSlice(0, state.feedLength()).forEach((e, i) => {
    parts.push(`${i === 0 ? '' : ','}\n`, cachedJson(e, () => ({ stream: e.stream, sequence: e.sequence, data: e.data })));
  });
  parts.push(']}\n');
  return parts.join('');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses and checks a store file. Throws a plain Error whose message says what is wrong; the caller
 * turns it into a StoreCorruptError that names the file.
 */
export function parseState(text: string): CommittedState {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message}); the file may be truncated`);
  }
  if (!isObject(doc) || doc.format !== JSON_STORE_FORMAT) throw new Error(`not a ${JSON_STORE_FORMAT} file`);
  if (doc.formatVersion !== JSON_STORE_FORMAT_VERSION) {
    throw new Error(`format version ${JSON.stringify(doc.formatVersion)} is not supported (this build reads ${JSON_STORE_FORMAT_VERSION})`);
  }
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
  doc.log.forEach((raw: unknown, position) => {
    if (!isObject(raw) || typeof raw.stream !== 'string' || !('data' in raw)) throw new Error(`log entry ${position} is malformed`);
    const expected = state.streamHead(raw.stream);
    if (raw.sequence !== expected) throw new Error(`log entry ${position} has sequence ${String(raw.sequence)} where stream ${raw.stream} expects ${expected}`);
    const entry: LogEntry = { stream: raw.stream, sequence: expected, position, data: raw.data };
    state.loadEntry(entry);
  });
  return state;
}
