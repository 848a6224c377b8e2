import { existsSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncDirectory } from './durable-json-file.js';
import { fileLines, type LineBatch } from './file-lines.js';
import type { Placement } from '../cold-lines.js';
import { HistoryFile, type JournalCut, type JournalPlacements } from './cold-history.js';
import { journalBehind, journalHeaderLine, readJournalHeader, type JournalIdentity } from './journal-header.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
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
 * One journal line per group commit: the changes only, so a commit writes what it changed and no more. The
 * line is `JSON.stringify` of a {@link GroupLine}, built an item at a time so that each sealed record's and
 * log entry's place in it is known: the store leaves them there, on disk. `lineOffset` is where the line
 * starts in the journal.
 */
export function encodeGroup(seq: number, changes: CommittedChanges, lineOffset = 0): EncodedGroup {
  const parts: string[] = [];
  let bytes = lineOffset;
  const add = (text: string): Placement => {
    const length = Buffer.byteLength(text);
    parts.push(text);
    bytes += length;
    return { offset: bytes - length, length };
  };
  const records: EncodedGroup['records'] = [];
  const entries: EncodedGroup['entries'] = [];
  add(`{"seq":${seq},"records":[`);
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
  add(changes.trims.length === 0 ? ']}\n' : `],"trims":${JSON.stringify(changes.trims)}}\n`);
  return { text: parts.join(''), records, entries };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Applies one parsed journal line to the state, checking it continues exactly where the state stands; returns what
 * it applied.
 */
function applyGroup(state: CommittedState<HistoryFile>, raw: unknown, expectedSeq: number): CommittedChanges {
  const applied: CommittedChanges = { records: [], entries: [], trims: [] };
  if (!isObject(raw) || raw.seq !== expectedSeq || !Array.isArray(raw.records) || !Array.isArray(raw.log)) {
    throw new Error(`group ${expectedSeq} is missing or malformed`);
  }
  for (const line of raw.records as unknown[]) {
    if (!Array.isArray(line) || typeof line[0] !== 'string' || typeof line[1] !== 'string')
      throw new Error(`group ${expectedSeq} has a malformed record`);
    const [kind, id] = line as [string, string];
    const current = state.recordMeta(kind, id);
    // A group holds several transactions' writes, folded to each record's last value: a record may have moved
    // several versions, or been created and deleted, within one group. A sealed record never changes; only
    // retention removes one (a null line).
    if (line[2] === null) {
      state.removeRecord(kind, id);
      applied.records.push([kind, id, null]);
      continue;
    }
    if (current?.terminal === true) throw new Error(`group ${expectedSeq} changes ${kind}/${id}, which is sealed`);
    const [, , version, terminal, data] = line as [string, string, number, boolean, unknown];
    if (!Number.isSafeInteger(version) || version < 1 || typeof terminal !== 'boolean')
      throw new Error(`group ${expectedSeq} has a malformed record ${kind}/${id}`);
    const record: StoredRecord = { kind, id, version, terminal, data };
    state.loadRecord(record);
    applied.records.push([kind, id, record]);
  }
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
      (trim[1] as number) >= state.streamHead(trim[0])
    ) {
      throw new Error(`group ${expectedSeq} has a malformed trim`);
    }
    state.trimStream(trim[0], trim[1] as number);
    applied.trims.push([trim[0], trim[1] as number]);
  }
  return applied;
}

/**
 * Replays a journal, read line by line, over the snapshot's state: groups up to `through` are already in the
 * snapshot (a crash between writing a snapshot and emptying the journal leaves them) and are skipped. A last
 * line cut short by a crash was never acknowledged and is ignored; anything wrong before it means the file is
 * corrupt (throws). Returns the bytes of complete groups and the last group's number.
 */
export async function replayJournal(
  batches: AsyncIterable<LineBatch> | Iterable<LineBatch>,
  state: CommittedState<HistoryFile>,
  through: number,
  history?: HistoryFile,
  startOffset = 0,
): Promise<{ validBytes: number; lastSeq: number; holdsThrough: boolean }> {
  let lastSeq = through;
  let validBytes = startOffset;
  // Whether the journal holds group `through` itself (the last the snapshot folded from it).
  let holdsThrough = false;
  // A line that does not parse was cut short only if nothing follows it; held until that is known.
  let unparsed: { at: number; message: string } | undefined;
  for await (const batch of batches) {
    for (let i = 0; i < batch.lines.length; i++) {
      if (unparsed !== undefined)
        throw new Error(`journal line at byte ${unparsed.at} is not JSON (${unparsed.message})`);
      // Without its newline the last group was never acknowledged, even if what was written parses.
      if (batch.unterminated === true) break;
      let raw: unknown;
      try {
        raw = JSON.parse(batch.lines[i]!);
      } catch (error) {
        unparsed = { at: validBytes, message: (error as Error).message };
        continue;
      }
      const seq = isObject(raw) ? raw.seq : undefined;
      if (seq === through) holdsThrough = true;
      if (typeof seq !== 'number' || seq > through) {
        const applied = applyGroup(state, raw, lastSeq + 1);
        lastSeq += 1;
        // Leave the group's history where it lies, if the line is exactly what this build writes (it knows
        // the places then); a line written otherwise keeps its group in memory until the next fold.
        if (history !== undefined) {
          const encoded = encodeGroup(lastSeq, applied, validBytes);
          if (encoded.text === `${batch.lines[i]!}\n`)
            state.leaveInJournal({ file: history, records: encoded.records, entries: encoded.entries });
        }
      }
      validBytes += batch.bytes[i]! + 1;
    }
  }
  return { validBytes, lastSeq, holdsThrough };
}

/** Writes a journal holding only its header, durably (temp file, fsync, rename, fsync of the folder). */
export async function createJournal(path: string, identity: JournalIdentity): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  const handle = await open(temp, 'w', PRIVATE_FILE_MODE);
  try {
    await handle.chmod(PRIVATE_FILE_MODE);
    await handle.write(journalHeaderLine(identity));
    await handle.sync();
    await handle.close();
    await rename(temp, path);
  } catch (error) {
    await handle.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw error;
  }
  await syncDirectory(dirname(path));
}

/**
 * The JSON store's write-ahead journal: each group commit appends one line and fsyncs it, so a commit costs
 * what it changed rather than a rewrite of the whole file. The store folds the journal into a new snapshot
 * when it has grown as large as the snapshot (within bounds, see `JsonFileStore`), which keeps replay short.
 */
export class Journal {
  /** Appends and cuts run one at a time: a cut must not lose a group appended while it copies the tail. */
  private turn: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private handle: FileHandle,
    /** The journal held open for reading the history the state leaves in it. */
    private history: HistoryFile,
    /** The file's length: its header and its acknowledged groups. */
    private bytes: number,
    private seq: number,
    /** What its header names (undefined: a journal from before headers, generation 0). */
    private identity: JournalIdentity | undefined,
    private headerBytes: number,
  ) {}

  /**
   * Opens the journal at `path` that the snapshot (`expected`: its store and generation) names, replaying
   * it into `state` and leaving the replayed groups' settled history in it; a torn last line is cut off.
   * A missing journal, or one that is not the snapshot's, throws. Beside a snapshot from before journal
   * generations (`expected` undefined) a missing journal is created as such stores always had it.
   */
  static async open(
    path: string,
    state: CommittedState<HistoryFile>,
    through: number,
    expected: JournalIdentity | undefined,
  ): Promise<Journal> {
    if (expected !== undefined && !existsSync(path)) {
      throw new Error(
        `the journal is missing, but the snapshot names generation ${expected.generation} of store ` +
          `${expected.storeId} beside it: ` +
          'opening without it would lose every commit acknowledged since the last fold',
      );
    }
    const handle = await open(path, 'a+', PRIVATE_FILE_MODE);
    let history: HistoryFile | undefined;
    try {
      await handle.chmod(PRIVATE_FILE_MODE);
      const header = await readJournalHeader(handle);
      const behind = journalBehind(header.identity, expected);
      history = new HistoryFile(path, 'journal');
      // Read line by line: a journal may grow as large as the snapshot before it is folded.
      const { validBytes, lastSeq, holdsThrough } = await replayJournal(
        fileLines(handle, undefined, header.bytes),
        state,
        through,
        history,
        header.bytes,
      );
      if (behind && !(through > 0 && holdsThrough)) {
        throw new Error(
          `the journal is generation ${header.identity?.generation ?? 0}, the one before the snapshot's, ` +
            `but does not hold group ${through} the snapshot folded from it: ` +
            "it is an older copy, and what the snapshot's generation held is missing",
        );
      }
      if (validBytes < (await handle.stat()).size) {
        await handle.truncate(validBytes);
        await handle.sync();
      }
      return new Journal(path, handle, history, validBytes, lastSeq, header.identity, header.bytes);
    } catch (error) {
      history?.close();
      await handle.close();
      throw error;
    }
  }

  /** Bytes of acknowledged groups in the journal (its header left out). */
  get size(): number {
    return this.bytes - this.headerBytes;
  }

  /** Where the journal's acknowledged groups end: the file length a cut drops everything before. */
  get end(): number {
    return this.bytes;
  }

  /** The generation its header names (0: a journal from before headers). */
  get generation(): number {
    return this.identity?.generation ?? 0;
  }

  /** The number of the last group appended (or replayed). */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Appends one group durably and says where its sealed records and log entries lie in the journal. On
   * failure the journal is cut back to where it was, so nothing half-written stays.
   */
  append(changes: CommittedChanges): Promise<JournalPlacements> {
    return this.inTurn(async () => {
      const group = encodeGroup(this.seq + 1, changes, this.bytes);
      const line = Buffer.from(group.text);
      try {
        await this.handle.write(line);
        await this.handle.datasync();
      } catch (error) {
        await this.handle.truncate(this.bytes);
        throw error;
      }
      this.bytes += line.length;
      this.seq += 1;
      return { file: this.history, records: group.records, entries: group.entries };
    });
  }

  /**
   * Drops the first `bytes` of the journal once a snapshot durably holds the groups in them, keeping every
   * group appended since (a fold runs while commits go on): the header of generation `identity` (the one
   * the snapshot names) and the rest are written to a temp file, fsynced and renamed over the journal. A
   * crash before the rename keeps the whole journal, of the generation before, whose first groups the
   * snapshot's `journalThrough` skips on replay.
   */
  cutThrough(bytes: number, identity: JournalIdentity): Promise<JournalCut> {
    return this.inTurn(async () => {
      const header = Buffer.from(journalHeaderLine(identity));
      const tail = Buffer.alloc(this.bytes - bytes);
      if (tail.length > 0) await this.handle.read(tail, 0, tail.length, bytes);
      const temp = join(dirname(this.path), `.${basename(this.path)}.${process.pid}.tmp`);
      // Opened before the rename, so appends after it go to the file that took the journal's name; in append
      // mode, like the journal itself, so a failed append's truncate leaves no gap behind the next one.
      await rm(temp, { force: true });
      const next = await open(temp, 'a+', PRIVATE_FILE_MODE);
      let nextHistory: HistoryFile | undefined;
      try {
        await next.chmod(PRIVATE_FILE_MODE);
        await next.write(Buffer.concat([header, tail]));
        await next.sync();
        nextHistory = new HistoryFile(this.path, 'journal', temp);
        await rename(temp, this.path);
      } catch (error) {
        nextHistory?.close();
        await next.close();
        await rm(temp, { force: true });
        throw error;
      }
      await this.handle.close();
      this.handle = next;
      this.bytes = header.length + tail.length;
      this.identity = identity;
      this.headerBytes = header.length;
      // The old file stays open for the caller, which moves what the state left in it before closing it.
      const cut: JournalCut = { from: this.history, to: nextHistory, shift: bytes - header.length };
      this.history = nextHistory;
      await syncDirectory(dirname(this.path));
      return cut;
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const done = this.turn.then(work);
    this.turn = done.catch(() => undefined);
    return done;
  }

  async close(): Promise<void> {
    this.history.close();
    await this.handle.close();
  }
}
