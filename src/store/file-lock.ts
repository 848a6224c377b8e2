import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { hostname } from 'node:os';
import nativeFs from 'fs-native-extensions';
import { StoreLockedError } from './store.js';

interface LockOwner {
  pid: number;
  hostname: string;
  acquiredAt: string;
}

/**
 * The file whose kernel lock is the store's ownership, and in which the holder writes who it is. Engines
 * before the kernel lock wrote their owner description to this same path in this same format.
 */
export const lockFilePath = (file: string): string => `${file}.owner`;

/** The directory proper-lockfile made for engines before the kernel lock. */
const legacyLockPath = (file: string) => `${file}.lock`;
/** Those engines refreshed that directory's mtime every 5 s; one touched more recently may still be held. */
const LEGACY_STALE_MS = 10_000;
/**
 * How long an opener keeps trying while the lock is held but its record names no running process (none yet,
 * or a holder that is dying): the holder records itself right after it locks, and a killed holder's
 * descriptors close once the kernel has torn it down (its memory first, then its files). That takes tens of
 * milliseconds for a large engine, but was measured at up to 2 s on a machine loaded 8 times over; the wait
 * ends as soon as the lock is free, so the bound only ever delays the refusal of a holder stuck in its exit.
 */
const SETTLE_WITHIN_MS = 5_000;
/** Opening the lock file again when the path was swapped under us: only an outside hand does that. */
const MAX_OPEN_ATTEMPTS = 5;
/** No symlink is followed: the lock file is truncated and written, so a planted link must not aim that elsewhere. */
const OPEN_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW;
const PRIVATE_FILE = 0o600;

export interface HeldLock {
  release(): Promise<void>;
  /**
   * Set once the lock file was removed or replaced (by an operator or a restore): the kernel lock still
   * stands, but on a file no other opener will find, so a second owner could start. The holder stops
   * committing when this is set.
   */
  compromised(): Error | undefined;
}

/**
 * Takes the single-writer lock of a store file: an exclusive kernel lock (an open-file-description lock on
 * Linux, flock on macOS) on `<file>.owner`, taken in one atomic step and held for the life of the process.
 * The kernel drops it when the holder dies however it dies, so a dead owner's store opens at once, and no
 * staleness is ever judged. A live holder, in this process or another, is named in the error.
 *
 * @example
 * ```ts
 * const lock = await acquireStoreLock('/var/lib/coven/automations.json'); // or throws StoreLockedError
 * try {
 *   if (lock.compromised() === undefined) commit();
 * } finally {
 *   await lock.release();
 * }
 * ```
 */
export async function acquireStoreLock(file: string): Promise<HeldLock> {
  const path = lockFilePath(file);
  const locked = await lockOrNameHolder(file, path);
  try {
    fchmodSync(locked.fd, PRIVATE_FILE);
    refuseLiveLegacyLock(file, path);
    recordOwner(locked.fd);
  } catch (error) {
    closeSync(locked.fd);
    throw error;
  }
  return heldLock(path, locked.fd, locked.stats);
}

/**
 * Takes the lock, or refuses naming the holder. While the lock is held by a process whose record is not
 * written yet, or that is dead but not yet torn down, the lock is simply tried again: nothing here judges
 * the holder dead, the kernel alone hands the lock over.
 */
async function lockOrNameHolder(file: string, path: string): Promise<{ fd: number; stats: Stats }> {
  const deadline = Date.now() + SETTLE_WITHIN_MS;
  for (;;) {
    const locked = lockedDescriptor(path);
    if (locked !== undefined) return locked;
    const owner = readOwner(path);
    const fate = owner === undefined ? 'unrecorded' : owner.hostname !== hostname() ? 'remote' : processFate(owner.pid);
    if (fate === 'running' || fate === 'remote') throw new StoreLockedError(file, describeOwner(owner));
    if (Date.now() >= deadline)
      throw new StoreLockedError(
        file,
        fate === 'unrecorded'
          ? 'another process (it has not recorded which)'
          : `${describeOwner(owner)}, which is exiting but has not released the lock within ${SETTLE_WITHIN_MS} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Opens and locks the lock file; undefined when another descriptor holds the lock. The file is never
 * unlinked, but something outside the engine may replace it between our open and our lock, so the lock
 * counts only once the path is seen to name the very inode locked.
 */
function lockedDescriptor(path: string): { fd: number; stats: Stats } | undefined {
  for (let attempt = 1; attempt <= MAX_OPEN_ATTEMPTS; attempt++) {
    const fd = openSync(path, OPEN_FLAGS, PRIVATE_FILE);
    let kept = false;
    try {
      if (!nativeFs.tryLock(fd)) return undefined;
      const stats = fstatSync(fd);
      if (namesInode(path, stats)) {
        kept = true;
        return { fd, stats };
      }
    } finally {
      // Closing our only descriptor also drops the lock, if we took one.
      if (!kept) closeSync(fd);
    }
  }
  throw new Error(`the lock file ${path} was replaced ${MAX_OPEN_ATTEMPTS} times while being locked`);
}

function namesInode(path: string, held: Stats): boolean {
  const now = statSync(path, { throwIfNoEntry: false });
  return now !== undefined && now.ino === held.ino && now.dev === held.dev;
}

/**
 * An engine from before the kernel lock knows only proper-lockfile's directory: while that is fresh, such
 * an engine may be committing, so the store is refused. A stale one is removed; only a holder of the kernel
 * lock does that, so no opener of this version races on it.
 */
function refuseLiveLegacyLock(file: string, path: string): void {
  const legacy = legacyLockPath(file);
  const stats = statSync(legacy, { throwIfNoEntry: false });
  if (stats === undefined || !stats.isDirectory()) return;
  if (Date.now() - stats.mtimeMs < LEGACY_STALE_MS) {
    throw new StoreLockedError(
      file,
      `${describeOwner(readOwner(path))} (the lock of an engine older than this one, at ${legacy})`,
    );
  }
  try {
    rmdirSync(legacy);
  } catch {
    // Not empty, so not proper-lockfile's: someone else's directory, left alone.
  }
}

function recordOwner(fd: number): void {
  const owner: LockOwner = { pid: process.pid, hostname: hostname(), acquiredAt: new Date().toISOString() };
  ftruncateSync(fd, 0);
  writeSync(fd, `${JSON.stringify(owner)}\n`, 0);
}

function heldLock(path: string, fd: number, stats: Stats): HeldLock {
  let held = true;
  let lost: Error | undefined;
  return {
    async release() {
      if (!held) return;
      held = false;
      try {
        // The file at rest names nobody; closing our only descriptor is what releases the lock.
        ftruncateSync(fd, 0);
      } finally {
        closeSync(fd);
      }
    },
    compromised() {
      if (held && lost === undefined && !namesInode(path, stats))
        lost = new Error(`the lock file ${path} was removed or replaced`);
      return lost;
    },
  };
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' && typeof owner.hostname === 'string' && typeof owner.acquiredAt === 'string'
      ? (owner as LockOwner)
      : undefined;
  } catch {
    return undefined;
  }
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner === undefined
    ? 'another process (owner unknown)'
    : `process ${owner.pid} on ${owner.hostname} since ${owner.acquiredAt}`;
}

/** Whether this system describes processes under /proc (Linux). */
const PROCFS = existsSync('/proc/self/stat');
/** SIGKILL's bit in /proc/<pid>/status's pending-signal masks. */
const SIGKILL_BIT = 1n << 8n;
/** PF_EXITING in /proc/<pid>/stat's flags: the process is in the kernel's exit path. */
const PF_EXITING = 0x4;

/**
 * What the kernel says of a local `pid`: `running`; `dying` — SIGKILL is pending, it is in its exit path, or it
 * is a zombie (exited, not yet reaped), so its lock is gone or about to go; or `gone`. Pending signals are read
 * before the exit flag, so a process moving from one to the other between the two reads is still seen dying.
 * Without /proc (macOS), signal 0 is all there is to go on: a process that answers it is running.
 */
function processFate(pid: number): 'running' | 'dying' | 'gone' {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return 'gone';
  }
  if (!PROCFS) return 'running';
  let status: string;
  let stat: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 'gone';
  }
  const killPending = /^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm;
  for (const [, mask] of status.matchAll(killPending)) if ((BigInt(`0x${mask}`) & SIGKILL_BIT) !== 0n) return 'dying';
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return 'dying';
  return (Number(fields[6]) & PF_EXITING) !== 0 ? 'dying' : 'running';
}
