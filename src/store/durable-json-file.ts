import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Adapter } from 'lowdb';
import { parseState, serializeState } from './json-document.js';
import type { CommittedState } from './layered-state.js';
import { StoreCorruptError } from './store.js';

/** What the lowdb document holds: the state and the last journal group it includes. */
export interface StoreDocument {
  committed: CommittedState;
  journalThrough: number;
}

/** Points where tests inject a failure into a durable write, to prove the old file survives. */
export interface WriteFaults {
  afterTempWrite?: () => void;
}

/** writev takes at most IOV_MAX (1024 on Linux) buffers per call. */
const WRITEV_BATCH = 1024;

async function writeDurably(path: string, chunks: Buffer[]): Promise<void> {
  const handle = await open(path, 'w');
  try {
    for (let i = 0; i < chunks.length; i += WRITEV_BATCH) await handle.writev(chunks.slice(i, i + WRITEV_BATCH));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(dir: string): Promise<void> {
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
    private readonly faults: WriteFaults = {},
  ) {
    this.tempPath = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  }

  async read(): Promise<StoreDocument | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreCorruptError(this.path, `unreadable (${(error as Error).message})`);
    }
    try {
      const { state, journalThrough } = parseState(text);
      return { committed: state, journalThrough };
    } catch (error) {
      throw new StoreCorruptError(this.path, (error as Error).message);
    }
  }

  async write(document: StoreDocument): Promise<void> {
    const chunks = serializeState(document.committed, document.journalThrough);
    try {
      await writeDurably(this.tempPath, chunks);
      this.faults.afterTempWrite?.();
      await rename(this.tempPath, this.path);
    } catch (error) {
      await rm(this.tempPath, { force: true });
      throw error;
    }
    await syncDirectory(dirname(this.path));
  }
}
