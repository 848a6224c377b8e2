import {
  ColdEntry,
  ColdLineCopier,
  ColdRecord,
  type HeldEntry,
  type HeldRecord,
  type HistoryFile,
  type Placement,
} from './cold-history.js';
import { CommittedState, type SnapshotSource } from './layered-state.js';
import {
  checksumHolds,
  dataChecksum,
  dataText,
  entryHead,
  entryLine,
  entryLineOf,
  recordHead,
  recordLine,
  recordLineOf,
  type EntryHead,
  type RecordHead,
} from './snapshot-lines.js';
import { isJournalIdentity, type JournalIdentity } from './journal-header.js';
import { StoreCorruptError, type LogEntry, type StoredRecord } from './store.js';

/** Identifies a coven-automata JSON store file; anything else is refused rather than overwritten. */
export const JSON_STORE_FORMAT = 'coven-automata/json-store';
/**
 * 2 adds `journalThrough`: the last journal group the snapshot holds. 3 adds each log entry's `position` and
 * `nextPosition`, because retention trims leave gaps in positions and streams that start past sequence 0.
 * 4 changes no field, only the layout: every record, log entry and closing bracket has a line of its own, so
 * a reader can load the file line by line instead of as one string (see {@link loadLines}). 5 adds a
 * checksum of each record's and log entry's data to its line (see snapshot-lines.ts), so an open checks a
 * line without parsing its data. 6 adds `storeId` and `journalGeneration`: the journal that must lie beside
 * the snapshot (see journal-header.ts). Versions 1–5 still open (1–3 parsed whole; their positions, before
 * 3, are their indexes; 4 and 5 parsed line by line; before 6 beside a journal without a header), and the
 * first fold writes them as 6.
 */
export const JSON_STORE_FORMAT_VERSION = 6;
const READABLE_VERSIONS = new Set([1, 2, 3, 4, 5, 6]);

/**
 * Bytes handed to the file a piece at a time: about this many per write. Each piece is encoded only when
 * the write before it finished, so a fold never blocks the event loop for longer than one piece takes to
 * stringify, and no encoded copy of the state outlives its write.
 */
const WRITE_PIECE_BYTES = 1_048_576;

/**
 * The file content for a state, produced lazily as pieces to write in order: a header line, one line per
 * record (records in storage order) and per log entry (commit order), and each closing bracket on a line of
 * its own (the layout {@link loadLines} reads). The source must not change while the pieces are consumed:
 * a fold writes from a point-in-time copy (see `CommittedState.pointInTime`). Cold records and entries are
 * copied from their file as bytes. With `placed`, the state is to leave what this file holds on disk: every
 * sealed record and log entry written is placed, the cold ones on themselves ({@link ColdRecord.placeNext}),
 * the others in `placed`, by identity.
 *
 * Until 2026-12-01 every record's and entry's encoded bytes were cached for later folds: after one fold of a
 * 195 MB store the cache held 271 MB (RSS 362 -> 661 MB) and the fold, encoding synchronously, stopped the
 * event loop for 3.1 s.
 */
export function* serializeState(
  state: SnapshotSource,
  journalThrough: number,
  journal: JournalIdentity,
  placed?: Map<StoredRecord | LogEntry, Placement>,
): Generator<Buffer> {
  let parts: Buffer[] = [];
  let size = 0;
  let written = 0;
  for (const [text, item] of documentText(state, journalThrough, journal)) {
    const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    if (item !== undefined && placed !== undefined) {
      if (item instanceof ColdRecord || item instanceof ColdEntry) item.placeNext(written, bytes.length);
      else placed.set(item, { offset: written, length: bytes.length });
    }
    parts.push(bytes);
    size += bytes.length;
    written += bytes.length;
    if (size >= WRITE_PIECE_BYTES) {
      yield Buffer.concat(parts, size);
      parts = [];
      size = 0;
    }
  }
  yield Buffer.concat(parts, size);
}

/**
 * The document as fragments in file order, each record and log entry encoded (or copied, if cold) when
 * reached; a record's or entry's own line comes with the item itself when the state may leave it on disk.
 */
function* documentText(
  state: SnapshotSource,
  journalThrough: number,
  journal: JournalIdentity,
): Generator<[string | Buffer, (HeldRecord | HeldEntry)?]> {
  const journals = new Map<HistoryFile, Buffer>();
  const identity = `"storeId":${JSON.stringify(journal.storeId)},"journalGeneration":${journal.generation}`;
  yield [
    `{"format":${JSON.stringify(JSON_STORE_FORMAT)},"formatVersion":${JSON_STORE_FORMAT_VERSION},${identity},"journalThrough":${journalThrough},"nextPosition":${state.nextPosition()},"records":{`,
  ];
  let firstKind = true;
  for (const kind of state.kinds()) {
    yield [`${firstKind ? '' : ','}\n${JSON.stringify(kind)}:{`];
    firstKind = false;
    // A copier per kind and one for the log: each reads the snapshot forward from where its part begins.
    const copier = new ColdLineCopier(journals);
    let first = true;
    for (const r of state.recordsOf(kind)) {
      yield [first ? '\n' : ',\n'];
      first = false;
      if (r instanceof ColdRecord) yield [coldRecordLine(r, copier), r];
      else yield [recordLine(r.id, r.version, r.terminal, encodeData(r.data)), r.terminal ? r : undefined];
    }
    yield ['\n}'];
  }
  yield ['\n},\n"log":['];
  const copier = new ColdLineCopier(journals);
  let first = true;
  for (const e of state.retainedFeed()) {
    yield [first ? '\n' : ',\n'];
    first = false;
    if (e instanceof ColdEntry) yield [coldEntryLine(e, copier), e];
    else yield [entryLine(e.stream, e.sequence, e.position, encodeData(e.data)), e];
  }
  yield ['\n]}\n'];
}

/** Data as a line holds it; `undefined` (which JSON cannot hold) is kept as null rather than leaving the field out. */
const encodeData = (data: unknown) => JSON.stringify(data) ?? 'null';
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * The data bytes of a journal item (`[…, data]`) that starts with `prefix`: the store placed only items it
 * wrote (or found written) exactly so, so anything else means the file changed under it.
 */
function itemData(cold: ColdRecord | ColdEntry, item: Buffer, prefix: string): Buffer {
  const head = Buffer.from(prefix);
  if (
    item.length <= head.length ||
    item[item.length - 1] !== CLOSE_BRACKET ||
    !item.subarray(0, head.length).equals(head)
  ) {
    throw new StoreCorruptError(
      cold.file.path,
      `the item at byte ${cold.offset} is not the one the store placed there; the file changed under the store`,
    );
  }
  return item.subarray(head.length, item.length - 1);
}

/** A cold record's snapshot line: copied from a snapshot (checked against its checksum), or built around the data bytes of a journal item. */
function coldRecordLine(r: ColdRecord, copier: ColdLineCopier): Buffer {
  const bytes = copier.bytesOf(r);
  if (r.file.layout === 'snapshot') {
    const { head, data } = copiedLine(r, bytes, recordHead);
    if (head.id !== r.id || head.version !== r.version || !head.terminal)
      throw changedUnder(r, `is not sealed record ${r.kind}/${r.id} at version ${r.version}`);
    return r.file.checksummed ? bytes : recordLineOf(r.id, r.version, true, data);
  }
  const id = JSON.stringify(r.id);
  return recordLineOf(r.id, r.version, true, itemData(r, bytes, `[${JSON.stringify(r.kind)},${id},${r.version},true,`));
}

/** A cold entry's snapshot line, the same way. */
function coldEntryLine(e: ColdEntry, copier: ColdLineCopier): Buffer {
  const bytes = copier.bytesOf(e);
  if (e.file.layout === 'snapshot') {
    const { head, data } = copiedLine(e, bytes, entryHead);
    if (head.stream !== e.stream || head.sequence !== e.sequence || head.position !== e.position)
      throw changedUnder(e, `is not entry ${e.sequence} of stream ${e.stream}`);
    return e.file.checksummed ? bytes : entryLineOf(e.stream, e.sequence, e.position, data);
  }
  return entryLineOf(
    e.stream,
    e.sequence,
    e.position,
    itemData(e, bytes, `[${JSON.stringify(e.stream)},${e.sequence},`),
  );
}

/**
 * Bytes of a line a fold copies: its head and its data bytes, checked against the line's checksum (a line
 * written before format 5 has none; the fold writes it with one).
 */
function copiedLine<H extends RecordHead | EntryHead>(
  cold: ColdRecord | ColdEntry,
  bytes: Buffer,
  headOf: (line: string) => H | undefined,
): { head: H; data: Buffer } {
  // The head lies within the line's first bytes unless a name is very long; then the line is decoded whole.
  let text = bytes.toString('utf8', 0, Math.min(bytes.length, HEAD_BYTES));
  let head = headOf(text);
  if (head === undefined && bytes.length > HEAD_BYTES) head = headOf((text = bytes.toString('utf8')));
  if (head === undefined || bytes[bytes.length - 1] !== CLOSE_BRACE)
    throw changedUnder(cold, 'is not laid out as the store wrote it');
  const data = bytes.subarray(Buffer.byteLength(text.slice(0, head.dataStart)), bytes.length - 1);
  if (cold.file.checksummed && !checksumHolds(data, head)) throw changedUnder(cold, 'does not match its checksum');
  return { head, data };
}

/** Bytes decoded to find a line's head (the data after it is copied as bytes). */
const HEAD_BYTES = 512;

const changedUnder = (cold: ColdRecord | ColdEntry, what: string) =>
  new StoreCorruptError(cold.file.path, `the line at byte ${cold.offset} ${what}; the file changed under the store`);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Lines of a file in order; `bytes` (each line's length in the file) is needed to leave history there. */
type Lines = { lines: readonly string[]; bytes?: readonly number[] };

/** Where a line lies in the file it was read from, for a state that leaves settled history there. */
interface LinePlace {
  file: HistoryFile;
  offset: number;
  length: number;
}

/**
 * Builds a state from a file's records and log entries in file order, checking each as it arrives. Given
 * where a line lies in its file, a sealed record or a log entry is kept as that place (cold); its data is
 * checked against the line's checksum (format 5) or parsed to check it (before 5), then let go.
 */
class StateBuilder {
  readonly state = new CommittedState();
  private entries = 0;

  constructor(private readonly formatVersion: number) {}

  /** A record parsed whole (any format). */
  record(kind: string, id: string, raw: unknown, place?: LinePlace): void {
    if (!isObject(raw) || typeof raw.terminal !== 'boolean' || !('data' in raw))
      throw new Error(`record ${kind}/${id} is malformed`);
    if (this.formatVersion >= 5 && raw.crc32 !== dataChecksum(encodeData(raw.data)))
      throw new Error(`record ${kind}/${id} does not match its checksum`);
    this.addRecord(kind, id, raw.version, raw.terminal, () => raw.data, place);
  }

  /** A format-5 record line: its data is parsed only if the record stays in memory. */
  recordLine(kind: string, line: string, place?: LinePlace): void {
    const head = recordHead(line);
    const text = head === undefined ? undefined : dataText(line, head);
    if (head === undefined || text === undefined || head.checksum === undefined) throw new NotLineLaidOut();
    if (!checksumHolds(text, head)) throw new Error(`record ${kind}/${head.id} does not match its checksum`);
    this.addRecord(
      kind,
      head.id,
      head.version,
      head.terminal,
      () => parseData(text, `record ${kind}/${head.id}`),
      place,
    );
  }

  private addRecord(
    kind: string,
    id: string,
    version: unknown,
    terminal: boolean,
    data: () => unknown,
    place: LinePlace | undefined,
  ): void {
    if (!Number.isSafeInteger(version) || (version as number) < 1) throw new Error(`record ${kind}/${id} is malformed`);
    if (place !== undefined && terminal)
      this.state.loadRecord(new ColdRecord(kind, id, version as number, place.file, place.offset, place.length));
    else this.state.loadRecord({ kind, id, version: version as number, terminal, data: data() });
  }

  /** A log entry parsed whole (any format). */
  entry(raw: unknown, place?: LinePlace): void {
    if (!isObject(raw) || typeof raw.stream !== 'string' || !('data' in raw))
      throw new Error(`log entry ${this.entries} is malformed`);
    if (this.formatVersion >= 5 && raw.crc32 !== dataChecksum(encodeData(raw.data)))
      throw new Error(`log entry ${this.entries} does not match its checksum`);
    this.addEntry(raw.stream, raw.sequence, raw.position, () => raw.data, place);
  }

  /** A format-5 log entry line: its data is parsed only if the entry stays in memory. */
  entryLine(line: string, place?: LinePlace): void {
    const head = entryHead(line);
    const text = head === undefined ? undefined : dataText(line, head);
    if (head === undefined || text === undefined || head.checksum === undefined) throw new NotLineLaidOut();
    if (!checksumHolds(text, head)) throw new Error(`log entry ${this.entries} does not match its checksum`);
    this.addEntry(head.stream, head.sequence, head.position, () => parseData(text, `log entry ${this.entries}`), place);
  }

  private addEntry(
    streamName: string,
    sequence: unknown,
    stated: unknown,
    data: () => unknown,
    place: LinePlace | undefined,
  ): void {
    const index = this.entries++;
    const positioned = this.formatVersion >= 3;
    const position = positioned ? stated : index;
    if (!Number.isSafeInteger(position) || (position as number) < this.state.nextPosition())
      throw new Error(`log entry ${index} has position ${String(position)}, not after the one before it`);
    // Retention trims a stream's oldest entries, so (from format 3) a stream's first entry may be past 0.
    const held = this.state.heldStreamEntries(streamName);
    const retained = held.length > 0;
    const expected = this.state.streamHead(streamName);
    const sequenceOk =
      retained || !positioned ? sequence === expected : Number.isSafeInteger(sequence) && (sequence as number) >= 0;
    if (!sequenceOk)
      throw new Error(
        `log entry ${index} has sequence ${String(sequence)} where stream ${streamName} expects ${expected}`,
      );
    // A stream's entries share its name's string (a parsed line brings its own copy: ≈ 60 bytes an entry).
    const stream = retained ? held[0]!.stream : streamName;
    if (place !== undefined)
      this.state.loadEntry(
        new ColdEntry(stream, sequence as number, position as number, place.file, place.offset, place.length),
      );
    else this.state.loadEntry({ stream, sequence: sequence as number, position: position as number, data: data() });
  }

  finish(nextPosition: unknown): CommittedState {
    if (this.formatVersion >= 3) {
      if (!Number.isSafeInteger(nextPosition) || (nextPosition as number) < this.state.nextPosition())
        throw new Error('nextPosition is missing or behind the log');
      this.state.advancePositions(nextPosition as number);
    }
    return this.state;
  }
}

/** Data whose checksum held: it parses unless it was written wrong. */
function parseData(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} holds data that is not JSON (${(error as Error).message})`);
  }
}

/** The header fields every version has, checked; the caller decides whether records and log are there. */
function checkHeader(doc: unknown): {
  formatVersion: number;
  journalThrough: number;
  journal: JournalIdentity | undefined;
} {
  if (!isObject(doc) || doc.format !== JSON_STORE_FORMAT) throw new Error(`not a ${JSON_STORE_FORMAT} file`);
  if (!READABLE_VERSIONS.has(doc.formatVersion as number)) {
    throw new Error(
      `format version ${JSON.stringify(doc.formatVersion)} is not supported (this build reads ${[...READABLE_VERSIONS].join(', ')})`,
    );
  }
  const journalThrough = doc.formatVersion === 1 ? 0 : doc.journalThrough;
  if (!Number.isSafeInteger(journalThrough) || (journalThrough as number) < 0)
    throw new Error('journalThrough is missing or not a count');
  const journal = { storeId: doc.storeId, generation: doc.journalGeneration };
  if ((doc.formatVersion as number) >= 6 && !isJournalIdentity(journal))
    throw new Error('storeId or journalGeneration is missing or malformed');
  return {
    formatVersion: doc.formatVersion as number,
    journalThrough: journalThrough as number,
    journal: (doc.formatVersion as number) >= 6 ? (journal as JournalIdentity) : undefined,
  };
}

export interface ParsedState {
  state: CommittedState;
  journalThrough: number;
  /** The journal the snapshot names; undefined before format 6. */
  journal: JournalIdentity | undefined;
}

/**
 * Parses and checks a whole store file held as one string (any version). Throws a plain Error whose message
 * says what is wrong; the caller turns it into a StoreCorruptError that names the file.
 */
export function parseState(text: string): ParsedState {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message}); the file may be truncated`);
  }
  const { formatVersion, journalThrough, journal } = checkHeader(doc);
  const { records, log, nextPosition } = doc as Record<string, unknown>;
  if (!isObject(records) || !Array.isArray(log)) throw new Error('records or log section missing');
  const builder = new StateBuilder(formatVersion);
  for (const [kind, byId] of Object.entries(records)) {
    if (!isObject(byId)) throw new Error(`records.${kind} is not an object`);
    for (const [id, raw] of Object.entries(byId)) builder.record(kind, id, raw);
  }
  for (const raw of log) builder.entry(raw);
  return { state: builder.finish(nextPosition), journalThrough, journal };
}

/** A file's lines do not have the line-per-item layout of format 4 (older version, or edited by hand). */
export class NotLineLaidOut extends Error {}

const withoutComma = (line: string) => (line.endsWith(',') ? line.slice(0, -1) : line);

/**
 * Loads a file of format 4 or later from its lines, one record or log entry per line, so no string of the whole file
 * ever exists: opening a 195 MB store (10k occurrences of history) peaked at 691 MB RSS read whole, 404 by lines.
 * Throws {@link NotLineLaidOut} as soon as a line breaks the layout (the caller then parses the file
 * whole, which also gives the exact error when the file is corrupt); other errors are the checks'.
 */
export async function loadLines(
  batches: AsyncIterable<Lines> | Iterable<Lines>,
  history?: HistoryFile,
): Promise<ParsedState> {
  let builder: StateBuilder | undefined;
  // Byte offset of the current line in the file (only known, and only needed, with a history file).
  let offset = 0;
  let journalThrough = 0;
  let journal: JournalIdentity | undefined;
  let nextPosition: unknown;
  let checksummed = false;
  // header -> records (depth 1) <-> kind (depth 2) -> log -> end
  let section: 'header' | 'records' | 'kind' | 'log-start' | 'log' | 'end' = 'header';
  let kind = '';
  for await (const { lines, bytes } of batches) {
    if (history !== undefined && bytes === undefined)
      throw new Error("a history file needs each line's length in bytes");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      let place: LinePlace | undefined;
      if (history !== undefined) {
        place = { file: history, offset, length: bytes![i]! - (line.endsWith(',') ? 1 : 0) };
        offset += bytes![i]! + 1;
      }
      switch (section) {
        case 'header': {
          if (!line.endsWith('"records":{')) throw new NotLineLaidOut();
          let header: unknown;
          try {
            header = JSON.parse(`${line}}}`);
          } catch {
            throw new NotLineLaidOut();
          }
          const checked = checkHeader(header);
          if (checked.formatVersion < 4) throw new NotLineLaidOut();
          builder = new StateBuilder(checked.formatVersion);
          checksummed = checked.formatVersion >= 5;
          if (history !== undefined) history.checksummed = checksummed;
          journalThrough = checked.journalThrough;
          journal = checked.journal;
          nextPosition = (header as Record<string, unknown>).nextPosition;
          section = 'records';
          break;
        }
        case 'records':
          if (line === '},') section = 'log-start';
          else if (line.startsWith('"') && line.endsWith('":{')) {
            kind = parseLine(line.slice(0, -2)) as string;
            section = 'kind';
          } else throw new NotLineLaidOut();
          break;
        case 'kind':
          if (line === '}' || line === '},') section = 'records';
          else if (checksummed) builder!.recordLine(kind, withoutComma(line), place);
          else {
            const one = parseLine(`{${withoutComma(line)}}`);
            const keys = isObject(one) ? Object.keys(one) : [];
            if (keys.length !== 1) throw new NotLineLaidOut();
            builder!.record(kind, keys[0]!, (one as Record<string, unknown>)[keys[0]!], place);
          }
          break;
        case 'log-start':
          if (line !== '"log":[') throw new NotLineLaidOut();
          section = 'log';
          break;
        case 'log':
          if (line === ']}') section = 'end';
          else if (checksummed) builder!.entryLine(withoutComma(line), place);
          else builder!.entry(parseLine(withoutComma(line)), place);
          break;
        case 'end':
          if (line !== '') throw new NotLineLaidOut();
      }
    }
  }
  if (section !== 'end') throw new NotLineLaidOut();
  const state = builder!.finish(nextPosition);
  if (history !== undefined) state.attachHistory(history);
  return { state, journalThrough, journal };
}

function parseLine(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new NotLineLaidOut();
  }
}
