import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncDirectory } from './durable-json-file.js';
import { fileLines, type LineBatch } from './file-lines.js';
import type { CommittedState } from './layered-state.js';
import type { LogEntry, StoredRecord } from './store.js';

/** What one group commit changed: records written (null = removed), log entries appended, and streams trimmed. */
export interface CommittedChanges {
  records: Array<[kind: string, id: string, record: StoredRecord | null]>;
  entries: LogEntry[];
  /** Retention: entries of the stream below this sequence are gone. */
  trims: Array<[stream: string, before: number]>;
}

type RecordLine = [kind: string, id: string, version: number, terminal: boolean, data: unknown] | [kind: string, id: string, deleted: null];
interface GroupLine {
  seq: number;
  records: RecordLine[];
  log: Array<[stream: string, sequence: number, data: unknown]>;
  /** Absent in groups without retention trims (and in every journal written before they existed). */
  trims?: Array<[stream: string, before: number]>;
}

/** One journal line per group commit: the changes only, so a commit writes what it changed and no more. */
export function encodeGroup(seq: number, changes: CommittedChanges): string {
  const line: GroupLine = {
    seq,
    records: changes.records.map(([kind, id, r]): RecordLine => (r === null ? [kind, id, null] : [kind, id, r.version, r.terminal, r.data])),
    log: changes.entries.map((e) => [e.stream, e.sequence, e.data]),
    ...(changes.trims.length === 0 ? {} : { trims: changes.trims }),
  };
  return `${JSON.stringify(line)}\n`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Applies one parsed journal line to the state, checking it continues exactly where the state stands. */
function applyGroup(state: CommittedState, raw: unknown, expectedSeq: number): void {
  if (!isObject(raw) || raw.seq !== expectedSeq || !Array.isArray(raw.records) || !Array.isArray(raw.log)) {
    throw new Error(`group ${expectedSeq} is missing or malformed`);
  }
  for (const line of raw.records as unknown[]) {
    if (!Array.isArray(line) || typeof line[0] !== 'string' || typeof line[1] !== 'string') throw new Error(`group ${expectedSeq} has a malformed record`);
    const [kind, id] = line as [string, string];
    const current = state.recordMeta(kind, id);
    // A group holds several transactions' writes, folded to each record's last value: a record may have moved
    // several versions, or been created and deleted, within one group. A sealed record never changes; only
    // retention removes one (a null line).
    if (line[2] === null) {
      state.removeRecord(kind, id);
      continue;
    }
    if (current?.terminal === true) throw new Error(`group ${expectedSeq} changes ${kind}/${id}, which is sealed`);
    const [, , version, terminal, data] = line as [string, string, number, boolean, unknown];
    if (!Number.isSafeInteger(version) || version < 1 || typeof terminal !== 'boolean') throw new Error(`group ${expectedSeq} has a malformed record ${kind}/${id}`);
    state.loadRecord({ kind, id, version, terminal, data });
  }
  for (const line of raw.log as unknown[]) {
    if (!Array.isArray(line) || typeof line[0] !== 'string' || line[1] !== state.streamHead(line[0])) throw new Error(`group ${expectedSeq} has a log entry out of sequence`);
    state.loadEntry({ stream: line[0], sequence: line[1] as number, position: state.nextPosition(), data: line[2] });
  }
  if (raw.trims !== undefined && !Array.isArray(raw.trims)) throw new Error(`group ${expectedSeq} has malformed trims`);
  for (const trim of (raw.trims ?? []) as unknown[]) {
    if (!Array.isArray(trim) || typeof trim[0] !== 'string' || !Number.isSafeInteger(trim[1]) || (trim[1] as number) >= state.streamHead(trim[0])) {
      throw new Error(`group ${expectedSeq} has a malformed trim`);
    }
    state.trimStream(trim[0], trim[1] as number);
  }
}

/**
 * Replays a journal, read line by line, over the snapshot's state: groups up to `through` are already in the
 * snapshot (a crash between writing a snapshot and emptying the journal leaves them) and are skipped. A last
 * line cut short by a crash was never acknowledged and is ignored; anything wrong before it means the file is
 * corrupt (throws). Returns the bytes of complete groups and the last group's number.
 */
export async function replayJournal(batches: AsyncIterable<LineBatch> | Iterable<LineBatch>, state: CommittedState, through: number): Promise<{ validBytes: number; lastSeq: number }> {
  let lastSeq = through;
  let validBytes = 0;
  // A line that does not parse was cut short only if nothing follows it; held until that is known.
  let unparsed: { at: number; message: string } | undefined;
  for await (const batch of batches) {
    for (let i = 0; i < batch.lines.length; i++) {
      if (unparsed !== undefined) throw new Error(`journal line at byte ${unparsed.at} is not JSON (${unparsed.message})`);
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
      if (typeof seq !== 'number' || seq > through) {
        applyGroup(state, raw, lastSeq + 1);
        lastSeq += 1;
      }
      validBytes += batch.bytes[i]! + 1;
    }
  }
  return { validBytes, lastSeq };
}

/**
 * The JSON store's write-ahead journal: each group commit appends one line and fsyncs it, so a commit costs
 * what it changed rather than a rewrite of the whole file. The store folds the journal into a new snapshot
 * when it has grown as large as the snapshot, which keeps replay short and writes at most twice per byte.
 */
export class Journal {
  /** Appends and cuts run one at a time: a cut must not lose a group appended while it copies the tail. */
  private turn: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private handle: FileHandle,
    private bytes: number,
    private seq: number,
  ) {}

  /** Opens (or creates) the journal at `path`, replaying it into `state`; a torn last line is cut off. */
  static async open(path: string, state: CommittedState, through: number): Promise<Journal> {
    // Read line by line: a journal may grow as large as the snapshot before it is folded.
    const handle = await open(path, 'a+');
    try {
      const { validBytes, lastSeq } = await replayJournal(fileLines(handle), state, through);
      if (validBytes < (await handle.stat()).size) {
        await handle.truncate(validBytes);
        await handle.sync();
      }
      return new Journal(path, handle, validBytes, lastSeq);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Bytes of acknowledged groups in the journal. */
  get size(): number {
    return this.bytes;
  }

  /** The number of the last group appended (or replayed). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Appends one group durably. On failure the journal is cut back to where it was, so nothing half-written stays. */
  append(changes: CommittedChanges): Promise<void> {
    return this.inTurn(async () => {
      const line = Buffer.from(encodeGroup(this.seq + 1, changes));
      try {
        await this.handle.write(line);
        await this.handle.datasync();
      } catch (error) {
        await this.handle.truncate(this.bytes);
        throw error;
      }
      this.bytes += line.length;
      this.seq += 1;
    });
  }

  /**
   * Drops the first `bytes` of the journal once a snapshot durably holds the groups in them, keeping every
   * group appended since (a fold runs while commits go on): the rest is copied to a temp file, fsynced and
   * renamed over the journal. A crash before the rename keeps the whole journal, whose first groups the
   * snapshot's `journalThrough` skips on replay.
   */
  cutThrough(bytes: number): Promise<void> {
    return this.inTurn(async () => {
      const tail = Buffer.alloc(this.bytes - bytes);
      if (tail.length > 0) await this.handle.read(tail, 0, tail.length, bytes);
      const temp = join(dirname(this.path), `.${basename(this.path)}.${process.pid}.tmp`);
      // Opened before the rename, so appends after it go to the file that took the journal's name; in append
      // mode, like the journal itself, so a failed append's truncate leaves no gap behind the next one.
      await rm(temp, { force: true });
      const next = await open(temp, 'a+');
      try {
        await next.write(tail);
        await next.sync();
        await rename(temp, this.path);
      } catch (error) {
        await next.close();
        await rm(temp, { force: true });
        throw error;
      }
      await this.handle.close();
      this.handle = next;
      this.bytes = tail.length;
      await syncDirectory(dirname(this.path));
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const done = this.turn.then(work);
    this.turn = done.catch(() => undefined);
    return done;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
