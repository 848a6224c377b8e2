import { crc32 } from 'node:zlib';
import type { LineBatch } from './file-lines.js';
import type { Placement } from '../cold-lines.js';
import type { HistoryFile } from './cold-history.js';
import type { CommittedChanges, CommittedState } from '../layered-state.js';
import type { LogEntry, StoredRecord } from '../store.js';

type RecordLine =
  | [kind: string, id: string, version: number, terminal: boolean, data: unknown]
  | [kind: string, id: string, deleted: null];
export interface GroupLine {
  seq: number;
  records: RecordLine[];
  log: Array<[stream: string, sequence: number, data: unknown]>;
  /** Absent in groups without retention trims (and in every journal written before they existed). */
  trims?: Array<[stream: string, before: number]>;
}

/** A group's journal line and where each sealed record and log entry of it lies in the journal. */
export interface EncodedGroup {
  text: string;
  records: Array<[StoredRecord, Placement]>;
  entries: Array<[LogEntry, Placement]>;
}

/**
 * Every group line starts with its checksum: `{"crc32":"xxxxxxxx",` then the group's fields, the CRC-32 being
 * that of everything after this prefix up to (not including) the newline. Fixed width, so the places of a
 * group's items are known before its checksum is.
 */
const CHECKSUM_PREFIX = '{"crc32":"';
const PREFIX_BYTES = CHECKSUM_PREFIX.length + 10;
/** How a group line of a journal from before checksums begins; a line of such a journal must begin so. */
const UNCHECKED_PREFIX = '{"seq":';

const groupChecksum = (body: string) => crc32(body).toString(16).padStart(8, '0');

/**
 * A journal group that is damaged where no crash could have left it (or where it would have been
 * acknowledged): `offset` is where its line begins in the journal.
 */
export class JournalDamage extends Error {
  constructor(
    readonly offset: number,
    reason: string,
  ) {
    super(`the group at byte ${offset} ${reason}`);
    this.name = 'JournalDamage';
  }
}

/**
 * One journal line per group commit: the changes only, so a commit writes what it changed and no more. The
 * line is a {@link GroupLine} as JSON behind its checksum, built an item at a time so that each sealed record's
 * and log entry's place in it is known: the store leaves them there, on disk. `lineOffset` is where the line
 * starts in the journal.
 */
export function encodeGroup(seq: number, changes: CommittedChanges, lineOffset = 0): EncodedGroup {
  const parts: string[] = [];
  let bytes = lineOffset + PREFIX_BYTES;
  const add = (text: string): Placement => {
    const length = Buffer.byteLength(text);
    parts.push(text);
    bytes += length;
    return { offset: bytes - length, length };
  };
  const records: EncodedGroup['records'] = [];
  const entries: EncodedGroup['entries'] = [];
  add(`"seq":${seq},"records":[`);
  changes.records.forEach(([kind, id, r], i) => {
    if (i > 0) add(',');
    const at = add(JSON.stringify(r === null ? [kind, id, null] : [kind, id, r.version, r.terminal, r.data]));
    if (r?.terminal === true) records.push([r, at]);
  });
  add('],"log":[');
  changes.entries.forEach((e, i) => {
    if (i > 0) add(',');
    entries.push([e, add(JSON.stringify([e.stream, e.sequence, e.data]))]);
  });
  add(changes.trims.length === 0 ? ']}' : `],"trims":${JSON.stringify(changes.trims)}}`);
  const body = parts.join('');
  return { text: `${CHECKSUM_PREFIX}${groupChecksum(body)}",${body}\n`, records, entries };
}

/** The checksum a group line states, or undefined if it does not begin as a group line. */
function statedChecksum(line: string): string | undefined {
  if (!line.startsWith(CHECKSUM_PREFIX) || line.slice(PREFIX_BYTES - 2, PREFIX_BYTES) !== '",') return undefined;
  const stated = line.slice(CHECKSUM_PREFIX.length, PREFIX_BYTES - 2);
  return /^[0-9a-f]{8}$/.test(stated) ? stated : undefined;
}

/** Whether `line` (without its newline) is a group line whose checksum holds. */
const checksumHolds = (line: string) => {
  const stated = statedChecksum(line);
  return stated !== undefined && groupChecksum(line.slice(PREFIX_BYTES)) === stated;
};

/**
 * Where a complete group ends inside an unterminated last line, if one does before the line's end: its newline
 * was damaged (a torn write ends where the crash cut it, never with a byte after a complete group). A group
 * ends with a closing brace, so the checksum runs once over the line and is compared at each one.
 */
function completeGroupWithin(line: string): number | undefined {
  const stated = statedChecksum(line);
  if (stated === undefined) return undefined;
  const expected = parseInt(stated, 16);
  let sum = 0;
  let from = PREFIX_BYTES;
  for (let end = line.indexOf('}', from); end !== -1 && end < line.length - 1; end = line.indexOf('}', from)) {
    sum = crc32(line.slice(from, end + 1), sum);
    from = end + 1;
    if (sum === expected) return end + 1;
  }
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Applies a group's record lines; a sealed record never changes, only retention removes one (a null line). */
function applyRecords(state: CommittedState<HistoryFile>, lines: unknown[], seq: number, applied: CommittedChanges) {
  for (const line of lines) {
    if (!Array.isArray(line) || typeof line[0] !== 'string' || typeof line[1] !== 'string')
      throw new Error(`group ${seq} has a malformed record`);
    const [kind, id] = line as [string, string];
    const current = state.recordMeta(kind, id);
    // A group holds several transactions' writes, folded to each record's last value: a record may have moved
    // several versions, or been created and deleted, within one group.
    if (line[2] === null) {
      state.removeRecord(kind, id);
      applied.records.push([kind, id, null]);
      continue;
    }
    if (current?.terminal === true) throw new Error(`group ${seq} changes ${kind}/${id}, which is sealed`);
    const [, , version, terminal, data] = line as [string, string, number, boolean, unknown];
    if (!Number.isSafeInteger(version) || version < 1 || typeof terminal !== 'boolean')
      throw new Error(`group ${seq} has a malformed record ${kind}/${id}`);
    const record: StoredRecord = { kind, id, version, terminal, data };
    state.loadRecord(record);
    applied.records.push([kind, id, record]);
  }
}

/**
 * Applies one parsed journal line to the state, checking it continues exactly where the state stands; returns what
 * it applied.
 */
function applyGroup(state: CommittedState<HistoryFile>, raw: unknown, expectedSeq: number): CommittedChanges {
  const applied: CommittedChanges = { records: [], entries: [], trims: [] };
  if (!isObject(raw) || raw.seq !== expectedSeq || !Array.isArray(raw.records) || !Array.isArray(raw.log)) {
    throw new Error(`group ${expectedSeq} is missing or malformed`);
  }
  applyRecords(state, raw.records as unknown[], expectedSeq, applied);
  for (const line of raw.log as unknown[]) {
    if (!Array.isArray(line) || typeof line[0] !== 'string' || line[1] !== state.streamHead(line[0]))
      throw new Error(`group ${expectedSeq} has a log entry out of sequence`);
    const entry: LogEntry = {
      stream: line[0],
      sequence: line[1] as number,
      position: state.nextPosition(),
      data: line[2],
    };
    state.loadEntry(entry);
    applied.entries.push(entry);
  }
  if (raw.trims !== undefined && !Array.isArray(raw.trims)) throw new Error(`group ${expectedSeq} has malformed trims`);
  for (const trim of (raw.trims ?? []) as unknown[]) {
    if (
      !Array.isArray(trim) ||
      typeof trim[0] !== 'string' ||
      !Number.isSafeInteger(trim[1]) ||
      // `before` = head retires the stream whole; a stream already retired (head 0) has nothing left to drop.
      (state.streamHead(trim[0]) > 0 && (trim[1] as number) > state.streamHead(trim[0]))
    ) {
      throw new Error(`group ${expectedSeq} has a malformed trim`);
    }
    state.trimStream(trim[0], trim[1] as number);
    applied.trims.push([trim[0], trim[1] as number]);
  }
  return applied;
}

/** A journal line read at `offset`; `last` when nothing follows it, `terminated` when its newline is there. */
interface ReadLine {
  text: string;
  offset: number;
  /** Its length in the file, newline left out. */
  bytes: number;
  last: boolean;
  terminated: boolean;
}

/**
 * A group line of a checksummed journal, parsed once its checksum held; undefined for a torn tail. Only a last
 * line without its newline can be a write a crash cut short (an append writes the newline last, and a group
 * is acknowledged only once all of it is durable): every other line must hold, and a last line that holds a
 * complete group followed by a byte that is not its newline is a damaged group, refused as well.
 */
function checkedGroup(line: ReadLine): unknown {
  if (!line.terminated) {
    if (completeGroupWithin(line.text) !== undefined)
      throw new JournalDamage(line.offset, 'is complete but the byte after it is not its newline');
    return undefined;
  }
  if (!checksumHolds(line.text)) throw new JournalDamage(line.offset, 'does not match its checksum');
  try {
    return JSON.parse(line.text.slice(0, 1) + line.text.slice(PREFIX_BYTES)) as unknown;
  } catch (error) {
    throw new JournalDamage(line.offset, `matches its checksum but is not JSON (${(error as Error).message})`);
  }
}

/**
 * A group line of a journal written before checksums, parsed; undefined for a torn tail. Nothing proves such
 * a line intact, so the rule of its time holds: a last line that is unterminated or does not parse was cut
 * short. Any other line must begin as those journals' groups did and parse.
 */
function uncheckedGroup(line: ReadLine): unknown {
  if (!line.terminated) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(line.text);
  } catch (error) {
    if (line.last) return undefined;
    throw new JournalDamage(line.offset, `is not JSON (${(error as Error).message})`);
  }
  if (!line.text.startsWith(UNCHECKED_PREFIX)) throw new JournalDamage(line.offset, 'is not a group line');
  return raw;
}

/** A journal's lines with their offsets, each knowing whether it is the last. */
async function* readLines(batches: AsyncIterable<LineBatch> | Iterable<LineBatch>, start: number) {
  let held: ReadLine | undefined;
  let offset = start;
  for await (const batch of batches) {
    for (let i = 0; i < batch.lines.length; i++) {
      if (held !== undefined) yield held;
      held = {
        text: batch.lines[i]!,
        offset,
        bytes: batch.bytes[i]!,
        last: false,
        terminated: batch.unterminated !== true,
      };
      offset += batch.bytes[i]! + 1;
    }
  }
  if (held !== undefined) yield { ...held, last: true };
}

/**
 * Replays a journal, read line by line, over the snapshot's state: groups up to `through` are already in the
 * snapshot (a crash between writing a snapshot and emptying the journal leaves them) and are skipped. A torn
 * last line (see {@link checkedGroup}) was never acknowledged and is ignored; anything else wrong throws,
 * {@link JournalDamage} naming the line's offset. Returns the bytes of complete groups and the last group's number.
 */
export async function replayJournal(
  batches: AsyncIterable<LineBatch> | Iterable<LineBatch>,
  state: CommittedState<HistoryFile>,
  through: number,
  options: {
    history?: HistoryFile;
    startOffset?: number;
    checksummed: boolean;
    /**
     * The journal is of the snapshot's own generation: a fold cut every group it folded from it, so each group
     * must come after `through` (one that does not means the snapshot's `journalThrough` is not what was written).
     */
    onlyAfterThrough?: boolean;
  },
): Promise<{ validBytes: number; lastSeq: number; holdsThrough: boolean }> {
  let lastSeq = through;
  let validBytes = options.startOffset ?? 0;
  // Whether the journal holds group `through` itself (the last the snapshot folded from it).
  let holdsThrough = false;
  for await (const line of readLines(batches, validBytes)) {
    const raw = options.checksummed ? checkedGroup(line) : uncheckedGroup(line);
    if (raw === undefined) break;
    const seq = isObject(raw) ? raw.seq : undefined;
    if (seq === through) holdsThrough = true;
    if (options.onlyAfterThrough === true && typeof seq === 'number' && seq <= through)
      throw new JournalDamage(
        line.offset,
        `is group ${seq}, but the snapshot says it holds every group through ${through}`,
      );
    if (typeof seq !== 'number' || seq > through) {
      let applied: CommittedChanges;
      try {
        applied = applyGroup(state, raw, lastSeq + 1);
      } catch (error) {
        throw new JournalDamage(line.offset, `does not continue the state: ${(error as Error).message}`);
      }
      lastSeq += 1;
      // Leave the group's history where it lies, if the line is exactly what this build writes (it knows
      // the places then); a line written otherwise keeps its group in memory until the next fold.
      if (options.history !== undefined) {
        const encoded = encodeGroup(lastSeq, applied, line.offset);
        if (encoded.text === `${line.text}\n`)
          state.leaveInJournal({ file: options.history, records: encoded.records, entries: encoded.entries });
      }
    }
    validBytes = line.offset + line.bytes + 1;
  }
  return { validBytes, lastSeq, holdsThrough };
}
