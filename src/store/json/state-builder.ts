import { ColdEntry, ColdRecord } from '../cold-lines.js';
import { CommittedState } from '../layered-state.js';
import type { HistoryFile } from './cold-history.js';
import { checksumHolds, dataChecksum, dataText, encodeData, entryHead, recordHead } from './snapshot-lines.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A file's lines do not have the line-per-item layout of format 4 (older version, or edited by hand). */
export class NotLineLaidOut extends Error {}

/** Where a line lies in the file it was read from, for a state that leaves settled history there. */
export interface LinePlace {
  file: HistoryFile;
  offset: number;
  length: number;
}

/**
 * Builds a state from a file's records and log entries in file order, checking each as it arrives. Given
 * where a line lies in its file, a sealed record or a log entry is kept as that place (cold); its data is
 * checked against the line's checksum (format 5) or parsed to check it (before 5), then let go.
 */
export class StateBuilder {
  readonly state = new CommittedState<HistoryFile>();
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

  finish(nextPosition: unknown): CommittedState<HistoryFile> {
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
    throw new Error(`${what} holds data that is not JSON (${(error as Error).message})`, { cause: error });
  }
}
