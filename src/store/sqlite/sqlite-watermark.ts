import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type Database from 'better-sqlite3';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { StoreCorruptError } from '../store.js';

/**
 * Why a commit watermark: under WAL an acknowledged commit lives only in `-wal` until a checkpoint copies it
 * into the database file, so a `-wal` deleted, emptied, cut or damaged after a kill loses it, and SQLite opens
 * what is left as if nothing were missing (a damaged frame ends the log there). The store counts its commits
 * in the database (`meta.commits`, written in each commit's transaction) and, once a commit is durable, writes
 * the count to `<file>.commits` (fsynced under `synchronous=FULL`). An open that finds the database holding
 * fewer commits than the watermark refuses. `meta.closedCleanly`, copied into the database file with a
 * process's first commit and at its close, says whether the watermark must be there: a database file alone
 * is a clean copy only if the store was closed.
 */
export const watermarkPath = (path: string) => `${path}.commits`;

const LINE = /^\{"commits":(\d{1,15}),"crc32":"([0-9a-f]{8})"\}\n$/;
const body = (commits: number) => `{"commits":${commits}`;
const line = (commits: number) => `${body(commits)},"crc32":"${crc32(body(commits)).toString(16).padStart(8, '0')}"}\n`;

/** What the database says of its commits (as a read-only connection sees it: file and log together). */
export interface CommitCount {
  commits: number;
  /**
   * False once a store committed since it opened the file (and after it was killed); true after its close,
   * and for stores made before the watermark.
   */
  closedCleanly: boolean;
}

export function readCommitCount(db: Database.Database): CommitCount {
  const get = db.prepare('SELECT value FROM meta WHERE key = ?').pluck();
  const commits = get.get('commits') as string | undefined;
  return { commits: commits === undefined ? 0 : Number(commits), closedCleanly: get.get('closedCleanly') !== 'false' };
}

/** The count in `<file>.commits`, undefined when there is none; a file that is not one is refused. */
function readWatermark(path: string): number | undefined {
  const file = watermarkPath(path);
  if (!existsSync(file)) return undefined;
  const m = LINE.exec(readFileSync(file, 'utf8'));
  const commits = m === null ? Number.NaN : Number(m[1]);
  if (m === null || crc32(body(commits)).toString(16).padStart(8, '0') !== m[2])
    throw new StoreCorruptError(file, 'the commit watermark is damaged (it is not a count with its checksum)');
  return commits;
}

/**
 * Refuses a database that holds fewer commits than were acknowledged: before anything writes to it, with
 * every file left as found. `found` is what the database holds as it would open now.
 */
export function checkCommitWatermark(path: string, found: CommitCount): void {
  const acknowledged = readWatermark(path);
  if (acknowledged === undefined) {
    if (found.closedCleanly) return;
    throw new StoreCorruptError(
      path,
      `the store was not closed cleanly and its commit watermark ${watermarkPath(path)} is missing, so the ` +
        'commits in its write-ahead log cannot be proven complete (a database file copied without its -wal ' +
        'while the store was open, or the watermark deleted). Restore the files the store had together',
    );
  }
  if (found.commits < acknowledged)
    throw new StoreCorruptError(
      path,
      `it holds ${found.commits} commits, but ${acknowledged} were acknowledged (${watermarkPath(path)}): the ` +
        `last ${acknowledged - found.commits} were in its write-ahead log (-wal), which was deleted, emptied, ` +
        'cut or damaged. Restore the -wal the store had, or a backup',
    );
}

/**
 * Refuses to create a new store where a watermark says commits were acknowledged: the database file was
 * moved or deleted, and a new one would take its place as if it never held anything.
 */
export function refuseOrphanWatermark(path: string): void {
  const acknowledged = readWatermark(path);
  if (acknowledged !== undefined && acknowledged > 0)
    throw new StoreCorruptError(
      path,
      `the database file is missing, but ${watermarkPath(path)} says ${acknowledged} commits were ` +
        'acknowledged in it: it was moved or deleted. Put it back; to start a new, empty store, remove the ' +
        'watermark too',
    );
}

/**
 * Counts a commit inside its transaction: `commits` in `meta`, and, until the database file holds it, the mark
 * that the store is open (`closedCleanly` false). Marked with the first commit rather than at open, so an open
 * that commits nothing (a refused command) leaves the database byte for byte as it was.
 */
export function countCommit(db: Database.Database, commits: number, markedOpen: boolean): void {
  const set = db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
  set.run('commits', String(commits));
  if (!markedOpen) set.run('closedCleanly', 'false');
}

export const MARK_CLOSED_SQL = "UPDATE meta SET value = 'true' WHERE key = 'closedCleanly'";

/**
 * Copies the log into the database file and empties it, so the database file itself says the store is open:
 * were the log lost from here on, the file alone would still demand the watermark. False when another
 * connection (an operator's sqlite3 shell) kept it from completing: the next commit tries again, and the
 * watermark meanwhile still catches a lost log.
 */
export function checkpointWhole(db: Database.Database): boolean {
  try {
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{
      busy: number;
      log: number;
      checkpointed: number;
    }>;
    return result !== undefined && result.busy === 0 && result.log === result.checkpointed;
  } catch {
    return false;
  }
}

/** The watermark file, held open: written at offset 0 after each durable commit. */
export class CommitWatermark {
  private constructor(
    private readonly handle: FileHandle,
    private readonly durable: boolean,
  ) {}

  /**
   * Opens (creates) `<file>.commits` holding `commits` alone (rewritten only if it says otherwise); `durable`
   * fsyncs every write.
   */
  static async open(path: string, commits: number, durable: boolean): Promise<CommitWatermark> {
    closeSync(openSync(watermarkPath(path), 'a', PRIVATE_FILE_MODE));
    const handle = await open(watermarkPath(path), 'r+');
    const watermark = new CommitWatermark(handle, durable);
    try {
      await handle.chmod(PRIVATE_FILE_MODE);
      if ((await handle.readFile('utf8')) !== line(commits)) {
        await handle.truncate(0);
        await watermark.write(commits);
      }
      return watermark;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * Records that `commits` are durable in the database. The count only grows, so the text never gets shorter
   * and one write at offset 0 replaces it (a few dozen bytes: within one sector, written whole).
   */
  async write(commits: number): Promise<void> {
    await this.handle.write(line(commits), 0);
    if (this.durable) await this.handle.datasync();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
