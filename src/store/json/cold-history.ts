import { closeSync, fstatSync, openSync, read as readCallback, readSync } from 'node:fs';
import { promisify } from 'node:util';
import type { AppendPlacements, ColdEntry, ColdFile, ColdRecord, FileCut } from '../cold-lines.js';
import { deepFreeze } from '../deep-freeze.js';
import { checksumHolds, dataText, entryHead, recordHead, type EntryHead, type RecordHead } from './snapshot-lines.js';
import { StoreCorruptError, type LogEntry, type StoredRecord } from '../store.js';

/**
 * How a file lays out what it holds: a snapshot has one line per record (`"<id>":{"version":…,"data":…}`)
 * and per log entry (`{"stream":…,"data":…}`); a journal has one line per group commit, in which a record
 * is `[kind,id,version,terminal,data]` and an entry `[stream,sequence,data]`.
 */
export type HistoryLayout = 'snapshot' | 'journal';

/**
 * A store file held open so that settled history can stay on disk: sealed records and log entries are
 * kept in memory as a place in the file ({@link ColdRecord}, {@link ColdEntry}) and read back when asked for.
 * The descriptor outlives a rename over the file's name, so a fold can replace the file while readers still
 * use the old one (the state moves to the new file before this one is closed).
 */
export class HistoryFile implements ColdFile {
  private fd: number | undefined;
  /**
   * A snapshot's lines carry checksums of their data (format 5 on): true for every file this build writes;
   * the loader sets it from an older file's header.
   */
  checksummed = true;

  /**
   * `path` is the name the file goes by in errors: a fold opens its new file under a temp name (`openAt`)
   * before renaming it to the store's.
   */
  constructor(
    readonly path: string,
    readonly layout: HistoryLayout,
    openAt: string = path,
  ) {
    this.fd = openSync(openAt, 'r');
  }

  /** The bytes at `offset`; the caller knows they belong to one line it placed there. */
  read(offset: number, length: number): Buffer {
    const buffer = this.readAtMost(offset, length);
    if (buffer.length < length)
      throw new StoreCorruptError(
        this.path,
        `it ends at byte ${offset + buffer.length}, inside a line the store placed there`,
      );
    return buffer;
  }

  /** Up to `length` bytes at `offset`, fewer where the file ends. */
  readAtMost(offset: number, length: number): Buffer {
    if (this.fd === undefined) throw new Error(`history file ${this.path} is closed`);
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, buffer, done, length - done, offset + done);
      if (n === 0) break;
      done += n;
    }
    return buffer.subarray(0, done);
  }

  /**
   * Up to `length` bytes from its start, read off the event loop: a fold takes a journal's bytes this way before it
   * encodes, rather than reading megabytes synchronously in the middle of a piece.
   */
  async readHead(length: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      if (this.fd === undefined) throw new Error(`history file ${this.path} is closed`);
      const { bytesRead } = await readAsync(this.fd, buffer, done, length - done, done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return buffer.subarray(0, done);
  }

  /** The file's size now. */
  size(): number {
    if (this.fd === undefined) throw new Error(`history file ${this.path} is closed`);
    return fstatSync(this.fd).size;
  }

  readRecord(cold: ColdRecord<HistoryFile>): StoredRecord {
    return warmRecord(cold);
  }

  readEntries(run: ReadonlyArray<ColdEntry<HistoryFile>>): LogEntry[] {
    return warmEntries(run);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

const readAsync = promisify(readCallback);

function parseLine(file: HistoryFile, offset: number, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new StoreCorruptError(
      file.path,
      `the line at byte ${offset} no longer parses (${(error as Error).message}); the file changed under the store`,
    );
  }
}

/** The record a cold one stands for, read from its file (a new frozen copy each time). */
function warmRecord(held: ColdRecord<HistoryFile>): StoredRecord {
  const text = held.file.read(held.offset, held.length).toString('utf8');
  let data: unknown;
  if (held.file.layout === 'journal') {
    const item = parseLine(held.file, held.offset, text) as unknown[];
    if (!Array.isArray(item) || item[1] !== held.id || item.length !== 5)
      throw new StoreCorruptError(
        held.file.path,
        `the item at byte ${held.offset} is not record ${held.kind}/${held.id}`,
      );
    data = item[4];
  } else if (held.file.checksummed) {
    const head = recordHead(text);
    if (head?.id !== held.id || head.version !== held.version || !head.terminal)
      throw new StoreCorruptError(
        held.file.path,
        `the line at byte ${held.offset} is not record ${held.kind}/${held.id}`,
      );
    data = checkedData(held, text, head);
  } else {
    const value = (parseLine(held.file, held.offset, `{${text}}`) as Record<string, { data: unknown } | undefined>)[
      held.id
    ];
    if (value === undefined)
      throw new StoreCorruptError(
        held.file.path,
        `the line at byte ${held.offset} is not record ${held.kind}/${held.id}`,
      );
    data = value.data;
  }
  return deepFreeze({ kind: held.kind, id: held.id, version: held.version, terminal: true, data });
}

/**
 * Separator bytes between two lines of a snapshot (`,\n`; a journal's items: `,`): entries this close are read in
 * one go.
 */
const ADJACENT_GAP = 2;

/**
 * The entries a run of cold ones in one file stand for, in order. Entries that sit next to each other in
 * the file (a stream's page of the feed usually does) are read with one read instead of one each.
 */
function warmEntries(run: ReadonlyArray<ColdEntry<HistoryFile>>): LogEntry[] {
  const out: LogEntry[] = new Array(run.length);
  let i = 0;
  while (i < run.length) {
    const first = run[i]!;
    let end = i + 1;
    let last = first;
    while (end < run.length) {
      const next = run[end]!;
      if (next.offset < last.offset + last.length || next.offset > last.offset + last.length + ADJACENT_GAP) break;
      last = next;
      end++;
    }
    const span = first.file.read(first.offset, last.offset + last.length - first.offset);
    for (; i < end; i++) {
      const cold = run[i]!;
      const start = cold.offset - first.offset;
      const text = span.toString('utf8', start, start + cold.length);
      out[i] = deepFreeze({
        stream: cold.stream,
        sequence: cold.sequence,
        position: cold.position,
        data: entryData(cold, text),
      });
    }
  }
  return out;
}

function entryData(cold: ColdEntry<HistoryFile>, text: string): unknown {
  if (cold.file.layout === 'journal') return (parseLine(cold.file, cold.offset, text) as unknown[])[2];
  if (!cold.file.checksummed) return (parseLine(cold.file, cold.offset, text) as { data: unknown }).data;
  const head = entryHead(text);
  if (head?.stream !== cold.stream || head.sequence !== cold.sequence)
    throw new StoreCorruptError(
      cold.file.path,
      `the line at byte ${cold.offset} is not entry ${cold.sequence} of stream ${cold.stream}`,
    );
  return checkedData(cold, text, head);
}

/** A snapshot line's data, parsed once its checksum held. */
function checkedData(
  cold: ColdRecord<HistoryFile> | ColdEntry<HistoryFile>,
  line: string,
  head: RecordHead | EntryHead,
): unknown {
  const text = dataText(line, head);
  if (text === undefined || !checksumHolds(text, head))
    throw new StoreCorruptError(
      cold.file.path,
      `the line at byte ${cold.offset} does not match its checksum; the file changed under the store`,
    );
  return parseLine(cold.file, cold.offset, text);
}

/** Where a journal append put each sealed record and log entry of its group. */
export type JournalPlacements = AppendPlacements<HistoryFile>;

/** The journal's file replaced by a shorter one: what `from` held from byte `shift` on is now in `to`. */
export type JournalCut = FileCut<HistoryFile>;

/** Bytes read ahead when a fold copies cold lines: they lie mostly in file order. */
const COPY_WINDOW_BYTES = 1_048_576;

/**
 * Reads cold lines for a fold. A snapshot's lines come through a window that moves forward (they lie in
 * file order), so copying a file costs few reads; one behind the window (records sealed out of order) is
 * read alone rather than moving the window back. A journal is read whole, once: every kind's records and
 * the log's entries are interleaved in it, and reading it through a window per part read it once per kind.
 */
export class ColdLineCopier {
  private readonly windows = new Map<HistoryFile, { start: number; bytes: Buffer }>();

  /**
   * `journals` holds each journal read whole: share it between the copiers of one fold. It may come with a journal's
   * first bytes read ahead ({@link HistoryFile.readHead}); one that ends before an item is read again whole.
   */
  constructor(private readonly journals: Map<HistoryFile, Buffer>) {}

  bytesOf(cold: ColdRecord<HistoryFile> | ColdEntry<HistoryFile>): Buffer {
    if (cold.file.layout === 'journal') {
      let whole = this.journals.get(cold.file);
      if (whole === undefined || cold.offset + cold.length > whole.length)
        this.journals.set(cold.file, (whole = cold.file.readAtMost(0, cold.file.size())));
      if (cold.offset + cold.length > whole.length)
        throw new StoreCorruptError(
          cold.file.path,
          `it ends at byte ${whole.length}, inside an item the store placed there`,
        );
      return whole.subarray(cold.offset, cold.offset + cold.length);
    }
    const window = this.windows.get(cold.file);
    if (
      window !== undefined &&
      cold.offset >= window.start &&
      cold.offset + cold.length <= window.start + window.bytes.length
    ) {
      return window.bytes.subarray(cold.offset - window.start, cold.offset - window.start + cold.length);
    }
    if (window !== undefined && cold.offset < window.start) return cold.file.read(cold.offset, cold.length);
    const bytes = cold.file.readAtMost(cold.offset, Math.max(cold.length, COPY_WINDOW_BYTES));
    if (bytes.length < cold.length)
      throw new StoreCorruptError(
        cold.file.path,
        `it ends at byte ${cold.offset + bytes.length}, inside a line the store placed there`,
      );
    this.windows.set(cold.file, { start: cold.offset, bytes });
    return bytes.subarray(0, cold.length);
  }
}
