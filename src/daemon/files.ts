import { randomBytes } from 'node:crypto';
import { lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../contract/digest.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';

/** What `<store>.daemon.json` records, so a client finds the daemon that owns a store. */
export interface DaemonRecord {
  pid: number;
  socketPath: string;
  url?: string;
  startedAt: string;
}

/** Longest Unix socket path the kernel takes (sun_path is 108 bytes, one of them the terminating NUL). */
const SUN_PATH_MAX = 107;

export const daemonRecordPath = (storeFile: string): string => `${storeFile}.daemon.json`;
export const tokenPath = (storeFile: string): string => `${storeFile}.token`;

/**
 * The socket beside the store, or, when that path is too long for sun_path, a short one under the OS temp
 * folder named by a digest of the store's path (recorded in daemon.json, so clients never guess it).
 */
export function socketPathFor(storeFile: string): string {
  const beside = `${storeFile}.sock`;
  if (Buffer.byteLength(beside) <= SUN_PATH_MAX) return beside;
  return join(tmpdir(), `coven-${sha256Hex(storeFile).slice(0, 24)}.sock`);
}

/**
 * Writes a file readable by its owner only, whole or not at all: a temporary file created exclusively with
 * mode 0600 (never following a planted link), then renamed over the target.
 */
export function writePrivateFile(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, text, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** A fresh secret for this daemon's life: 32 random bytes, hex, written 0600 beside the store. */
export function issueToken(storeFile: string): string {
  const token = randomBytes(32).toString('hex');
  writePrivateFile(tokenPath(storeFile), `${token}\n`);
  return token;
}

/** The daemon record of a store, or undefined when there is none or it is not one (a torn or foreign file). */
export function readDaemonRecord(storeFile: string): DaemonRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(daemonRecordPath(storeFile), 'utf8'));
  } catch {
    return undefined;
  }
  const record = parsed as Partial<DaemonRecord> | null;
  if (typeof record?.socketPath !== 'string' || typeof record.pid !== 'number') return undefined;
  return record as DaemonRecord;
}

/**
 * Clears a socket a killed daemon left behind. Only called while holding the store lock, so no live daemon of
 * this store can be listening on it; anything at that path that is not a socket is the operator's, and is kept
 * (listening then fails with a clear EADDRINUSE).
 */
export function removeStaleSocket(socketPath: string): void {
  try {
    if (lstatSync(socketPath).isSocket()) rmSync(socketPath, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Removes what a daemon wrote beside its store (its socket, record and token) when it stops. */
export function removeDaemonFiles(storeFile: string, socketPath: string): void {
  removeStaleSocket(socketPath);
  rmSync(daemonRecordPath(storeFile), { force: true });
  rmSync(tokenPath(storeFile), { force: true });
}
