import { crc32 } from 'node:zlib';
import { deepFreeze } from '../deep-freeze.js';
import { StoreCorruptError, type LogEntry, type StoredRecord } from '../store.js';

/**
 * Each SQLite row carries a CRC-32 of everything it serves (for a record: kind, id, version, sealed flag and
 * data text; for a log entry: stream, sequence, position and data text), checked on every read of it. SQLite
 * checks a page's structure, not the bytes of the values in it: a flipped bit inside a value is served as a
 * changed value (a changed prompt) unless something checks it. The fields before the data are joined by NULs.
 */
export type Row = { kind: string; id: string; version: number; terminal: number; data: string; crc: number | null };
export type LogRow = { position: number; stream: string; sequence: number; data: string; crc: number | null };

export const recordChecksum = (kind: string, id: string, version: number, terminal: number, data: string): number =>
  crc32(data, crc32(`${kind}\0${id}\0${version}\0${terminal}\0`));

export const entryChecksum = (stream: string, sequence: number, position: number, data: string): number =>
  crc32(data, crc32(`${stream}\0${sequence}\0${position}\0`));

/** Refuses a row whose bytes are not the ones committed; `kind` and `id` are what the read asked for. */
export function checkedRecord<T>(file: string, row: Row, kind: string, id?: string): StoredRecord<T> {
  checkRow(file, row, kind, id);
  return deepFreeze({
    kind: row.kind,
    id: row.id,
    version: row.version,
    terminal: row.terminal === 1,
    data: parseData<T>(file, row.data, () => `record ${kind}/${row.id}`),
  });
}

/** A row's version once its checksum holds (its data is not parsed). */
export function checkedVersion(file: string, row: Row, kind: string, id: string): number {
  checkRow(file, row, kind, id);
  return row.version;
}

function checkRow(file: string, row: Row, kind: string, id: string | undefined): void {
  if (row.kind !== kind || (id !== undefined && row.id !== id)) {
    throw new StoreCorruptError(
      file,
      `the row read for record ${kind}/${id ?? row.id} is record ${String(row.kind)}/${String(row.id)} ` +
        '(an index and its table disagree)',
    );
  }
  if (
    typeof row.data !== 'string' ||
    !Number.isSafeInteger(row.version) ||
    (row.terminal !== 0 && row.terminal !== 1) ||
    row.crc !== recordChecksum(row.kind, row.id, row.version, row.terminal, row.data)
  ) {
    throw new StoreCorruptError(file, `record ${kind}/${id ?? String(row.id)} does not match its checksum`);
  }
}

const describeEntry = (row: LogRow) =>
  `log entry ${String(row.sequence)} of stream ${String(row.stream)} (position ${String(row.position)})`;

/** Refuses a log row whose bytes are not the ones committed; `stream`, when given, is the stream the read asked for. */
export function checkedEntry<T>(file: string, row: LogRow, stream?: string): LogEntry<T> {
  if (stream !== undefined && row.stream !== stream)
    throw new StoreCorruptError(
      file,
      `the row read from stream ${stream} is ${describeEntry(row)} (an index and its table disagree)`,
    );
  if (
    typeof row.data !== 'string' ||
    typeof row.stream !== 'string' ||
    !Number.isSafeInteger(row.sequence) ||
    row.crc !== entryChecksum(row.stream, row.sequence, row.position, row.data)
  ) {
    throw new StoreCorruptError(file, `${describeEntry(row)} does not match its checksum`);
  }
  return deepFreeze({
    stream: row.stream,
    sequence: row.sequence,
    position: row.position,
    data: parseData<T>(file, row.data, () => describeEntry(row)),
  });
}

function parseData<T>(file: string, text: string, what: () => string): T {
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new StoreCorruptError(file, `${what()} holds data that is not JSON (${(error as Error).message})`);
  }
}

/** SQLite found a page malformed, or the file is not a database: the store's bytes changed under it. */
export const isSqliteCorruption = (error: unknown) =>
  /^SQLITE_(CORRUPT|NOTADB)/.test((error as { code?: string }).code ?? '');

/** The error a read or commit hands on: SQLite's own corruption reports become {@link StoreCorruptError}. */
export function asStoreError(file: string, error: unknown): unknown {
  return isSqliteCorruption(error) ? new StoreCorruptError(file, (error as Error).message) : error;
}

/**
 * A page of records as a list read asked for it: ids ascending and inside its bounds. An index whose
 * entries changed can hand back rows whose own bytes are intact but that the read did not ask for.
 */
export function checkedPage<T>(
  file: string,
  kind: string,
  options: { after?: string; before?: string },
  page: Array<StoredRecord<T>>,
): Array<StoredRecord<T>> {
  let previous = options.after;
  for (const record of page) {
    if (
      (previous !== undefined && record.id <= previous) ||
      (options.before !== undefined && record.id >= options.before)
    ) {
      throw new StoreCorruptError(
        file,
        `a list of ${kind} records came back out of order at ${kind}/${record.id} (an index and its table disagree)`,
      );
    }
    previous = record.id;
  }
  return page;
}

/** Log entries as a read asked for them: `keyOf` (sequence or position) strictly ascending after `after`. */
export function inOrder<T>(
  file: string,
  what: string,
  after: number,
  entries: Array<LogEntry<T>>,
  keyOf: (entry: LogEntry<T>) => number,
): Array<LogEntry<T>> {
  let previous = after;
  for (const entry of entries) {
    if (keyOf(entry) <= previous)
      throw new StoreCorruptError(
        file,
        `a read of ${what} came back out of order at position ${entry.position} (an index and its table disagree)`,
      );
    previous = keyOf(entry);
  }
  return entries;
}
