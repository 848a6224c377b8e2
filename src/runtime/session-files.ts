import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256Hex } from '../contract/digest.js';

/** The files one child-process session leaves on disk, all named after its session id. */
export interface SessionPaths {
  /** Launch record: the session key and attempt, written once the session's start is claimed. */
  meta: string;
  log: string;
  /** The command's exit code, written by the wrapper (temp + rename) after the command ends. */
  exit: string;
  /** Claimed exactly once: by the wrapper before it runs the command, or by a fence that forbids it. */
  start: string;
  /** Present once a cancellation was requested. */
  cancel: string;
}

/** The session id is a function of the session key alone, so a key can name only one session, ever. */
export const sessionIdOf = (sessionKey: string): string => `cp-${sha256Hex(sessionKey).slice(0, 24)}`;

export function sessionPaths(sessionsDir: string, sessionId: string): SessionPaths {
  const base = join(sessionsDir, sessionId);
  return {
    meta: `${base}.json`,
    log: `${base}.log`,
    exit: `${base}.exit`,
    start: `${base}.start`,
    cancel: `${base}.cancel`,
  };
}

/** Creates the sessions folder owner-only (0700) whatever the umask. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** Opens a file 0600 whatever the umask (the mode given to open is masked; fchmod is not). */
export function openPrivate(path: string, flags: string): number {
  const fd = openSync(path, flags, 0o600);
  try {
    fchmodSync(fd, 0o600);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

function writePrivateTemp(path: string, text: string, durable: boolean): string {
  const temp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const fd = openPrivate(temp, 'wx');
  try {
    writeSync(fd, text);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return temp;
}

/**
 * Creates `path` with `text` only if it does not exist, in one atomic step: the content is complete before
 * the name appears (a hard link of a finished temp file), so no reader ever sees a half-written claim.
 * Answers false when the name already exists.
 */
export function createExclusive(path: string, text: string, durable = false): boolean {
  const temp = writePrivateTemp(path, text, durable);
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temp);
  }
  if (durable) {
    const dir = openSync(dirname(path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
  return true;
}

/**
 * The temp file a wrapper writes its exit code into, created empty and 0600 by the engine so that the code is
 * private whatever the umask. Unique per launch: a wrapper that loses the start claim never touches it.
 */
export function exitTempFor(paths: SessionPaths): string {
  const temp = `${paths.exit}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  closeSync(openPrivate(temp, 'wx'));
  return temp;
}

/**
 * The engine's umask for the wrapper to give back to the command (it creates its own files under 077).
 * Read from /proc (process.umask() without an argument is deprecated); elsewhere the wrapper asks its shell.
 */
export function umaskVariable(): { COVEN_UMASK?: string } {
  try {
    const umask = /^Umask:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return umask === undefined ? {} : { COVEN_UMASK: umask };
  } catch {
    return {};
  }
}

/** Closes a descriptor of this process's own; a close that fails (already closed) changes nothing for a launch. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/** Removes files that may already be gone. */
export function removeQuietly(...paths: string[]): void {
  for (const path of paths) {
    try {
      unlinkSync(path);
    } catch {
      // already removed
    }
  }
}

/** Replaces `path` with `text` atomically (temp + rename), 0600. */
export function writePrivate(path: string, text: string): void {
  renameSync(writePrivateTemp(path, text, false), path);
}

/** What the start file says: which process claimed the session, or that it was fenced before any did. */
export type StartRecord =
  | { kind: 'started'; pid: number; startTime: string | null }
  /** The wrapper has created the start file and not yet written it (one write; microseconds). */
  | { kind: 'claiming'; since: number }
  | { kind: 'fenced'; at: string }
  | { kind: 'absent' }
  | { kind: 'unreadable'; detail: string };

/**
 * The fence's mark; the wrapper's claim is `started pid=<pid> starttime=<ticks>` (see the wrapper script).
 * The fence appears whole (a hard link); only a wrapper's claim can be seen empty.
 */
export const fenceText = (at: Date): string => `fenced never_started at=${at.toISOString()}\n`;

export function readStart(path: string): StartRecord {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'unreadable', detail: `start file ${path} cannot be read: ${(error as Error).message}` };
  }
  if (text === '') return { kind: 'claiming', since: statSync(path).mtimeMs };
  const started = /^started pid=([1-9][0-9]*) starttime=([0-9]*)\n$/.exec(text);
  if (started !== null)
    return { kind: 'started', pid: Number(started[1]), startTime: started[2] === '' ? null : started[2]! };
  const fenced = /^fenced never_started at=(\S+)\n$/.exec(text);
  if (fenced !== null) return { kind: 'fenced', at: fenced[1]! };
  return {
    kind: 'unreadable',
    detail: `start file ${path} holds neither a start claim nor a fence: ${JSON.stringify(text.slice(0, 80))}`,
  };
}

/**
 * Whether the process that claimed a session still runs. On Linux this reads /proc/<pid>/stat: a zombie
 * (state Z or X) is dead, and a pid whose start time (field 22) differs from the claimed one is another
 * process that reused the pid. Without /proc, or without a recorded start time, only `kill(pid, 0)` is left.
 */
export function claimantAlive(pid: number, startTime: string | null): boolean {
  let stat: string | undefined;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat')) return false;
  }
  if (stat !== undefined) {
    // Field 2 (the command name) may hold spaces and parentheses; the fields after its last ')' are plain.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    if (state === 'Z' || state === 'X') return false;
    return startTime === null || fields[19] === startTime;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export const sizeOf = (path: string): number => (existsSync(path) ? statSync(path).size : 0);

/** The file naming a sessions folder's evidence root; made once, never rewritten. */
export const EVIDENCE_ROOT_FILE = 'evidence-root';

/**
 * The evidence root a sessions folder stands for: `dir:<real path>#<id>`, the id read from a file created once
 * in the folder (atomically; the first creator's id wins). Two engines name the same root only when they share
 * the very folder (the same real path and the same id file), not merely a path that looks alike elsewhere.
 */
export function folderEvidenceRoot(sessionsDir: string): string {
  const file = join(sessionsDir, EVIDENCE_ROOT_FILE);
  if (!existsSync(file)) createExclusive(file, `${randomBytes(16).toString('hex')}\n`, true);
  const id = readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{32}$/.test(id)) throw new Error(`${file} does not hold an evidence root id`);
  return `dir:${realpathSync(sessionsDir)}#${id}`;
}
