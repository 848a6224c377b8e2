import { existsSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { syncDirectory } from './durable-json-file.js';
import { fileLines } from './file-lines.js';
import { HistoryFile, type JournalCut, type JournalPlacements } from './cold-history.js';
import { encodeGroup, replayJournal } from './journal-groups.js';
import { journalBehind, journalHeaderLine, readJournalHeader, type JournalIdentity } from './journal-header.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import type { CommittedChanges, CommittedState } from '../layered-state.js';

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
    /** Its groups carry checksums: every journal this build writes (see {@link Journal.checksummed}). */
    private withChecksums: boolean,
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
        {
          history,
          startOffset: header.bytes,
          checksummed: header.checksummed,
          onlyAfterThrough: header.identity !== undefined && !behind,
        },
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
      return new Journal(path, handle, history, validBytes, lastSeq, header.identity, header.bytes, header.checksummed);
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

  /**
   * Its acknowledged bytes as they are now (through {@link end}), read off the event loop, by the file a fold's
   * cold journal lines are copied from: the fold reads them before it encodes, not in the middle of a piece.
   */
  async readAcknowledged(): Promise<Map<HistoryFile, Buffer>> {
    const history = this.history;
    return new Map([[history, await history.readHead(this.bytes)]]);
  }

  /** The generation its header names (0: a journal from before headers). */
  get generation(): number {
    return this.identity?.generation ?? 0;
  }

  /**
   * False for a journal written before group checksums: its groups were read as its build wrote them,
   * unverified. The store folds such a journal at open, before any commit could append to it, so a journal
   * never mixes checked and unchecked groups.
   */
  get checksummed(): boolean {
    return this.withChecksums;
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
      this.withChecksums = true;
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
