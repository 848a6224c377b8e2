import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import type { LogWindow, SessionLog } from './runtime.js';

/** The most a single window of a session's output holds, whatever a caller asks for. */
export const MAX_LOG_WINDOW = 1024 * 1024;

/** Where a window starts in output of `size` bytes: a negative offset counts back from the end. */
function startOf(window: LogWindow, size: number): number {
  const from = window.offset < 0 ? size + window.offset : window.offset;
  return Math.min(Math.max(0, from), size);
}

/**
 * A window of a log file, read from one open descriptor so the size and the bytes agree; undefined when the file
 * does not exist (no session output). `complete` is the caller's word that the session has ended.
 */
export function readLogFile(path: string, window: LogWindow, complete: boolean): SessionLog | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    const offset = startOf(window, size);
    const length = Math.min(Math.max(0, window.limit), MAX_LOG_WINDOW, size - offset);
    const buffer = Buffer.alloc(length);
    const read = length === 0 ? 0 : readSync(fd, buffer, 0, length, offset);
    return { text: buffer.subarray(0, read).toString('utf8'), offset, nextOffset: offset + read, size, complete };
  } finally {
    closeSync(fd);
  }
}

/** A window of output held whole in memory (an in-process session's, or one kept in a database row). */
export function logOfText(output: string, window: LogWindow, complete: boolean): SessionLog {
  const bytes = Buffer.from(output, 'utf8');
  const offset = startOf(window, bytes.length);
  const end = Math.min(bytes.length, offset + Math.min(Math.max(0, window.limit), MAX_LOG_WINDOW));
  return {
    text: bytes.subarray(offset, end).toString('utf8'),
    offset,
    nextOffset: end,
    size: bytes.length,
    complete,
  };
}

/**
 * The signal a shell's exit status names: a command killed by signal N leaves `$?` at 128 + N (POSIX shells). A
 * command that itself exits 128 + N reads the same, so readers show it beside the code, never instead of it.
 */
export function signalOfShellStatus(code: number): string | undefined {
  if (code <= 128 || code > 128 + 64) return undefined;
  const found = Object.entries(constants.signals).find(([, n]) => n === code - 128);
  return found?.[0];
}
