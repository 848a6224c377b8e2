import type { CommittedState } from '../layered-state.js';
import type { HistoryFile } from './cold-history.js';
import { isJournalIdentity, type JournalIdentity } from './journal-header.js';
import { NotLineLaidOut, StateBuilder, type LinePlace } from './state-builder.js';

/** Identifies a coven-automata JSON store file; anything else is refused rather than overwritten. */
export const JSON_STORE_FORMAT = 'coven-automata/json-store';
/**
 * The version this build writes. Older versions still open (FORMAT.md lists what each added) because a store
 * must survive an upgrade; the first fold rewrites them at this version.
 */
export const JSON_STORE_FORMAT_VERSION = 6;
const READABLE_VERSIONS = new Set([1, 2, 3, 4, 5, 6]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Lines of a file in order; `bytes` (each line's length in the file) is needed to leave history there. */
type Lines = { lines: readonly string[]; bytes?: readonly number[] };

/** The header fields every version has, checked; the caller decides whether records and log are there. */
function checkHeader(doc: unknown): {
  formatVersion: number;
  journalThrough: number;
  journal: JournalIdentity | undefined;
} {
  if (!isObject(doc) || doc.format !== JSON_STORE_FORMAT) throw new Error(`not a ${JSON_STORE_FORMAT} file`);
  if (!READABLE_VERSIONS.has(doc.formatVersion as number)) {
    throw new Error(
      `format version ${JSON.stringify(doc.formatVersion)} is not supported ` +
        `(this build reads ${[...READABLE_VERSIONS].join(', ')})`,
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
  state: CommittedState<HistoryFile>;
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
    throw new Error(`not valid JSON (${(error as Error).message}); the file may be truncated`, {
      cause: error,
    });
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

const withoutComma = (line: string) => (line.endsWith(',') ? line.slice(0, -1) : line);

/**
 * Loads a file of format 4 or later from its lines, one record or log entry per line, so no string of the whole file
 * ever exists (which, read whole, is what an open's peak memory was made of).
 * Throws {@link NotLineLaidOut} as soon as a line breaks the layout (the caller then parses the file
 * whole, which also gives the exact error when the file is corrupt); other errors are the checks'.
 */
export async function loadLines(
  batches: AsyncIterable<Lines> | Iterable<Lines>,
  history?: HistoryFile,
): Promise<ParsedState> {
  const reader = new LineReader(history);
  // Byte offset of the current line in the file (only known, and only needed, with a history file).
  let offset = 0;
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
      reader.line(line, place);
    }
  }
  return reader.finish();
}

/** Where a line-laid-out file is, line by line: header -> records (depth 1) <-> kind (depth 2) -> log -> end. */
type Section = 'header' | 'records' | 'kind' | 'log-start' | 'log' | 'end';

/** Follows a line-laid-out file's sections, handing each record and log entry line to a {@link StateBuilder}. */
class LineReader {
  private builder: StateBuilder | undefined;
  private section: Section = 'header';
  private kind = '';
  private checksummed = false;
  private journalThrough = 0;
  private journal: JournalIdentity | undefined;
  private nextPosition: unknown;

  constructor(private readonly history: HistoryFile | undefined) {}

  line(line: string, place: LinePlace | undefined): void {
    switch (this.section) {
      case 'header':
        return this.header(line);
      case 'records':
        if (line === '},') this.section = 'log-start';
        else if (line.startsWith('"') && line.endsWith('":{')) {
          this.kind = parseLine(line.slice(0, -2)) as string;
          this.section = 'kind';
        } else throw new NotLineLaidOut();
        return;
      case 'kind':
        if (line === '}' || line === '},') this.section = 'records';
        else this.record(withoutComma(line), place);
        return;
      case 'log-start':
        if (line !== '"log":[') throw new NotLineLaidOut();
        this.section = 'log';
        return;
      case 'log':
        if (line === ']}') this.section = 'end';
        else if (this.checksummed) this.builder!.entryLine(withoutComma(line), place);
        else this.builder!.entry(parseLine(withoutComma(line)), place);
        return;
      case 'end':
        if (line !== '') throw new NotLineLaidOut();
    }
  }

  private header(line: string): void {
    if (!line.endsWith('"records":{')) throw new NotLineLaidOut();
    let header: unknown;
    try {
      header = JSON.parse(`${line}}}`);
    } catch {
      throw new NotLineLaidOut();
    }
    const checked = checkHeader(header);
    if (checked.formatVersion < 4) throw new NotLineLaidOut();
    this.builder = new StateBuilder(checked.formatVersion);
    this.checksummed = checked.formatVersion >= 5;
    if (this.history !== undefined) this.history.checksummed = this.checksummed;
    this.journalThrough = checked.journalThrough;
    this.journal = checked.journal;
    this.nextPosition = (header as Record<string, unknown>).nextPosition;
    this.section = 'records';
  }

  private record(line: string, place: LinePlace | undefined): void {
    if (this.checksummed) return this.builder!.recordLine(this.kind, line, place);
    const one = parseLine(`{${line}}`);
    const keys = isObject(one) ? Object.keys(one) : [];
    if (keys.length !== 1) throw new NotLineLaidOut();
    this.builder!.record(this.kind, keys[0]!, (one as Record<string, unknown>)[keys[0]!], place);
  }

  finish(): ParsedState {
    if (this.section !== 'end') throw new NotLineLaidOut();
    const state = this.builder!.finish(this.nextPosition);
    if (this.history !== undefined) state.attachHistory(this.history);
    return { state, journalThrough: this.journalThrough, journal: this.journal };
  }
}

function parseLine(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new NotLineLaidOut();
  }
}
