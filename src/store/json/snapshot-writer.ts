import { ColdEntry, ColdRecord, type HeldEntry, type HeldRecord, type Placement } from '../cold-lines.js';
import type { SnapshotSource } from '../layered-state.js';
import { StoreCorruptError, type LogEntry, type StoredRecord } from '../store.js';
import { ColdLineCopier, type HistoryFile } from './cold-history.js';
import type { JournalIdentity } from './journal-header.js';
import { JSON_STORE_FORMAT, JSON_STORE_FORMAT_VERSION } from './json-document.js';
import {
  checksumHolds,
  encodeData,
  entryHead,
  entryLine,
  entryLineOf,
  recordHead,
  recordLine,
  recordLineOf,
  type EntryHead,
  type RecordHead,
} from './snapshot-lines.js';

/**
 * Bytes handed to the file a piece at a time: about this many per write. Each piece is encoded only when
 * the write before it finished, so a fold never blocks the event loop for longer than one piece takes to
 * stringify, and no encoded copy of the state outlives its write.
 */
const WRITE_PIECE_BYTES = 262_144;

/**
 * The file content for a state, produced lazily as pieces to write in order: a header line, one line per
 * record (records in storage order) and per log entry (commit order), and each closing bracket on a line of
 * its own (the layout {@link loadLines} reads). The source must not change while the pieces are consumed:
 * a fold writes from a point-in-time copy (see `CommittedState.pointInTime`). Cold records and entries are
 * copied from their file as bytes. With `placed`, the state is to leave what this file holds on disk: every
 * sealed record and log entry written is placed, the cold ones on themselves ({@link ColdRecord.placeNext}),
 * the others in `placed`, by identity. Nothing encoded is kept for the next fold: a cache of encoded lines
 * outgrew the state it encoded (bench/README.md, Store design notes). `journals` may hold journals' bytes read
 * ahead (see {@link ColdLineCopier}).
 */
export function* serializeState(
  state: SnapshotSource<HistoryFile>,
  journalThrough: number,
  journal: JournalIdentity,
  placed?: Map<StoredRecord | LogEntry, Placement>,
  journals = new Map<HistoryFile, Buffer>(),
): Generator<Buffer> {
  let parts: Buffer[] = [];
  let size = 0;
  let written = 0;
  for (const [text, item] of documentText(state, journalThrough, journal, journals)) {
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
  state: SnapshotSource<HistoryFile>,
  journalThrough: number,
  journal: JournalIdentity,
  journals: Map<HistoryFile, Buffer>,
): Generator<[string | Buffer, (HeldRecord<HistoryFile> | HeldEntry<HistoryFile>)?]> {
  const identity = `"storeId":${JSON.stringify(journal.storeId)},"journalGeneration":${journal.generation}`;
  yield [
    `{"format":${JSON.stringify(JSON_STORE_FORMAT)},"formatVersion":${JSON_STORE_FORMAT_VERSION},${identity},` +
      `"journalThrough":${journalThrough},"nextPosition":${state.nextPosition()},"records":{`,
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

const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * The data bytes of a journal item (`[…, data]`) that starts with `prefix`: the store placed only items it
 * wrote (or found written) exactly so, so anything else means the file changed under it.
 */
function itemData(cold: ColdRecord<HistoryFile> | ColdEntry<HistoryFile>, item: Buffer, prefix: string): Buffer {
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

/**
 * A cold record's snapshot line: copied from a snapshot (checked against its checksum), or built around the data
 * bytes of a journal item.
 */
function coldRecordLine(r: ColdRecord<HistoryFile>, copier: ColdLineCopier): Buffer {
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
function coldEntryLine(e: ColdEntry<HistoryFile>, copier: ColdLineCopier): Buffer {
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
  cold: ColdRecord<HistoryFile> | ColdEntry<HistoryFile>,
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

const changedUnder = (cold: ColdRecord<HistoryFile> | ColdEntry<HistoryFile>, what: string) =>
  new StoreCorruptError(cold.file.path, `the line at byte ${cold.offset} ${what}; the file changed under the store`);
