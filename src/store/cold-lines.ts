import type { LogEntry, StoredRecord } from './store.js';

/**
 * A file a durable store leaves settled history in: sealed records and log entries are kept in memory as a
 * place in the file ({@link ColdRecord}, {@link ColdEntry}) and read back through it when asked for. The
 * backend decides what the bytes at a place look like and how they are verified; the committed state only
 * keeps places and asks for them back.
 */
export interface ColdFile {
  /** The name the file goes by in errors. */
  readonly path: string;
  /** The record a cold one in this file stands for (a new frozen copy each time). */
  readRecord(cold: ColdRecord<ColdFile>): StoredRecord;
  /** The entries a run of cold ones in this file stand for, in order. */
  readEntries(run: ReadonlyArray<ColdEntry<ColdFile>>): LogEntry[];
  close(): void;
}

/** Where a write put a line (or a journal item) the state can leave on disk afterwards. */
export interface Placement {
  offset: number;
  length: number;
}

/** Where an append to `file` put each sealed record and log entry of its group. */
export interface AppendPlacements<F extends ColdFile = ColdFile> {
  file: F;
  records: Array<[StoredRecord, Placement]>;
  entries: Array<[LogEntry, Placement]>;
}

/** A file replaced by a shorter one: what `from` held from byte `shift` on is now in `to`. */
export interface FileCut<F extends ColdFile = ColdFile> {
  from: F;
  to: F;
  shift: number;
}

/**
 * A line left in its file. A fold copies it into the next file and notes where ({@link placeNext}); once
 * that file replaced this one, {@link moveTo} points the line there — in place, because an object per line
 * would be allocated again on every fold, which stalls the event loop on a large history (bench/README.md).
 */
abstract class ColdLine<F extends ColdFile> {
  private nextOffset = -1;
  private nextLength = 0;

  constructor(
    public file: F,
    public offset: number,
    public length: number,
  ) {}

  /** The file was replaced by one holding what it held from byte `shift` on (a journal cut its folded head). */
  shiftTo(file: F, shift: number): void {
    this.file = file;
    this.offset -= shift;
  }

  /** A fold wrote this line at `offset` of the file it is writing. */
  placeNext(offset: number, length: number): void {
    this.nextOffset = offset;
    this.nextLength = length;
  }

  /**
   * The fold's file replaced the old one: read the line from where the fold put it. False if the fold did
   * not write it (it was committed while the fold wrote, and is in the journal).
   */
  moveTo(file: F): boolean {
    if (this.nextOffset < 0) return false;
    this.file = file;
    this.offset = this.nextOffset;
    this.length = this.nextLength;
    this.nextOffset = -1;
    return true;
  }
}

/** A sealed record left on disk at `offset`/`length` of `file` (the file's backend knows the line's layout). */
export class ColdRecord<F extends ColdFile = ColdFile> extends ColdLine<F> {
  /** Only sealed records are left on disk (a getter: no field per record). */
  get terminal(): true {
    return true;
  }

  constructor(
    readonly kind: string,
    readonly id: string,
    readonly version: number,
    file: F,
    offset: number,
    length: number,
  ) {
    super(file, offset, length);
  }
}

/** A log entry left on disk at `offset`/`length` of `file`. */
export class ColdEntry<F extends ColdFile = ColdFile> extends ColdLine<F> {
  constructor(
    readonly stream: string,
    readonly sequence: number,
    readonly position: number,
    file: F,
    offset: number,
    length: number,
  ) {
    super(file, offset, length);
  }
}

/** A record as the committed state holds it: in memory, or a place in a file. */
export type HeldRecord<F extends ColdFile = ColdFile> = StoredRecord | ColdRecord<F>;
/** A log entry as the committed state holds it: in memory, or a place in a file. */
export type HeldEntry<F extends ColdFile = ColdFile> = LogEntry | ColdEntry<F>;

/** The record a held one stands for: itself, or read back from its file. */
export function warmRecord(held: HeldRecord): StoredRecord {
  return held instanceof ColdRecord ? held.file.readRecord(held) : held;
}

/**
 * The entries the held ones stand for, in order. Each run of cold entries in one file is handed to that
 * file at once, so it can read neighbouring lines together (a stream's page of the feed usually is one run).
 */
export function warmEntries(held: readonly HeldEntry[]): LogEntry[] {
  const out: LogEntry[] = [];
  let i = 0;
  while (i < held.length) {
    const first = held[i]!;
    if (!(first instanceof ColdEntry)) {
      out.push(first);
      i++;
      continue;
    }
    let end = i + 1;
    while (end < held.length) {
      const next = held[end]!;
      if (!(next instanceof ColdEntry) || next.file !== first.file) break;
      end++;
    }
    for (const entry of first.file.readEntries(held.slice(i, end) as ColdEntry[])) out.push(entry);
    i = end;
  }
  return out;
}
