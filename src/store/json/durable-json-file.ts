import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Adapter } from 'lowdb';
import type { Placement } from '../cold-lines.js';
import { HistoryFile } from './cold-history.js';
import { fileLines } from './file-lines.js';
import type { JournalIdentity } from './journal-header.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { loadLines, parseState, type ParsedState } from './json-document.js';
import { serializeState } from './snapshot-writer.js';
import { NotLineLaidOut } from './state-builder.js';
import type { CommittedState, SnapshotSource } from '../layered-state.js';
import { StoreCorruptError, type LogEntry, type StoredRecord } from '../store.js';

/** What the lowdb document holds: the state, the last journal group it includes and the journal it names. */
export interface StoreDocument {
  committed: CommittedState<HistoryFile>;
  journalThrough: number;
  /** Undefined only for a snapshot from before journal generations, until its first fold. */
  journal: JournalIdentity | undefined;
}

/**
 * The file-system step that publishes a written snapshot: renaming the synced temp file over the store file.
 * A port, so a test can wrap it to crash or hold a fold at the one point where the old file must survive.
 */
export interface SnapshotFileSystem {
  rename(from: string, to: string): Promise<void>;
}

const NODE_FILE_SYSTEM: SnapshotFileSystem = { rename };

/** Writes the pieces in order (each made once the write before it finished), then fsyncs. */
async function writeDurably(path: string, pieces: Iterable<Buffer>): Promise<void> {
  const handle = await open(path, 'w', PRIVATE_FILE_MODE);
  try {
    await handle.chmod(PRIVATE_FILE_MODE);
    for (const piece of pieces) await handle.write(piece);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a rename in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A lowdb adapter for the store's snapshot with a durable write: write a temp file, fsync it, rename it over
 * the store file, fsync the directory. lowdb's own steno writer renames without fsync, so a power loss could keep a
 * rename whose data never reached the disk.
 */
export class DurableJsonFile implements Adapter<StoreDocument> {
  readonly tempPath: string;

  constructor(
    readonly path: string,
    private readonly files: SnapshotFileSystem = NODE_FILE_SYSTEM,
  ) {
    this.tempPath = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  }

  async read(): Promise<StoreDocument | null> {
    let parsed: ParsedState;
    try {
      parsed = (await this.loadByLines()) ?? parseState(await readFile(this.path, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      if (error instanceof StoreCorruptError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      throw new StoreCorruptError(
        this.path,
        code === undefined ? (error as Error).message : `unreadable (${(error as Error).message})`,
      );
    }
    return { committed: parsed.state, journalThrough: parsed.journalThrough, journal: parsed.journal };
  }

  /**
   * A file laid out a line per item (format version 4 on) loads line by line, leaving settled history in the file
   * (held open for it); undefined when the file is not laid out so (then it is parsed whole, and held whole until its
   * first fold).
   */
  private async loadByLines(): Promise<ParsedState | undefined> {
    const handle = await open(this.path, 'r');
    const history = new HistoryFile(this.path, 'snapshot');
    try {
      return await loadLines(fileLines(handle), history);
    } catch (error) {
      history.close();
      if (error instanceof NotLineLaidOut) return undefined;
      throw error;
    } finally {
      await handle.close();
    }
  }

  async write(document: StoreDocument): Promise<void> {
    if (document.journal === undefined) throw new Error('a snapshot is written naming its journal');
    await this.writeSnapshot(document.committed, document.journalThrough, document.journal);
  }

  /**
   * Writes a snapshot of `source` holding the journal's groups through `journalThrough`, naming `journal` as the one
   * beside it.
   */
  async writeSnapshot(
    source: SnapshotSource<HistoryFile>,
    journalThrough: number,
    journal: JournalIdentity,
  ): Promise<void> {
    await this.replace(serializeState(source, journalThrough, journal));
  }

  /**
   * Writes a snapshot like {@link writeSnapshot} and returns the new file opened for reading, with `placed`
   * filled with where each sealed record and log entry landed in it, so the state can leave them there.
   */
  async writeSnapshotHoldingHistory(
    source: SnapshotSource<HistoryFile>,
    journalThrough: number,
    journal: JournalIdentity,
    placed: Map<StoredRecord | LogEntry, Placement>,
    journals?: Map<HistoryFile, Buffer>,
  ): Promise<HistoryFile> {
    let history: HistoryFile | undefined;
    try {
      // Opened on the temp file once it is written: the descriptor follows the file through the rename.
      await this.replace(
        serializeState(source, journalThrough, journal, placed, journals),
        () => void (history = new HistoryFile(this.path, 'snapshot', this.tempPath)),
      );
    } catch (error) {
      history?.close();
      throw error;
    }
    return history!;
  }

  /** Temp file, fsync, rename over the store file, fsync the directory; `beforeRename` runs once it is written. */
  private async replace(pieces: Iterable<Buffer>, beforeRename?: () => void): Promise<void> {
    try {
      await writeDurably(this.tempPath, pieces);
      beforeRename?.();
      await this.files.rename(this.tempPath, this.path);
    } catch (error) {
      await rm(this.tempPath, { force: true });
      throw error;
    }
    await syncDirectory(dirname(this.path));
  }
}
