import { crc32 } from 'node:zlib';

/**
 * The grammar of a JSON store snapshot's item lines. A record is `"<id>":{"version":…,"terminal":…,"data":…}`
 * and a log entry `{"stream":…,"sequence":…,"position":…,"data":…}`; from format 5 each also carries
 * `"crc32":"<8 hex digits>"` just before `"data"`: the CRC-32 of the data's text as written (UTF-8).
 *
 * Why a checksum: an open checks every line, and parsing each one whole to do so was most of the cost of
 * opening a large store (JSON.parse and its garbage). The fields before the data are read with a pattern, the data
 * checked by its checksum (which, unlike a parse, also catches a changed digit or letter), and a sealed
 * record's or entry's data is parsed only when it is read back. Fixed width, so a line can be patched in place.
 */

/** The checksum a line carries for its data text (a string is taken as its UTF-8 bytes, as the file holds it). */
export function dataChecksum(data: string | Uint8Array): string {
  return crc32(data).toString(16).padStart(8, '0');
}

/** Whether data has the checksum a line's head states (compared as numbers: no string per line). */
export const checksumHolds = (data: string | Uint8Array, head: LineHead) =>
  head.checksum !== undefined && crc32(data) === head.checksumValue;

/** What precedes an item line's data; `dataStart` is where the data text begins (in characters of the line). */
interface LineHead {
  dataStart: number;
  /** Absent in lines written before format 5. */
  checksum: string | undefined;
  /** The checksum as a number (NaN when absent). */
  checksumValue: number;
}

export interface RecordHead extends LineHead {
  id: string;
  version: number;
  terminal: boolean;
}

export interface EntryHead extends LineHead {
  stream: string;
  sequence: number;
  position: number;
}

// A JSON string token: quotes around anything but a quote or backslash, or an escape.
const STRING = '("(?:[^"\\\\]|\\\\.)*")';
const CHECKSUM = '(?:"crc32":"([0-9a-f]{8})",)?';
const RECORD_HEAD = new RegExp(`^${STRING}:\\{"version":(\\d{1,15}),"terminal":(true|false),${CHECKSUM}"data":`);
const ENTRY_HEAD = new RegExp(
  `^\\{"stream":${STRING},"sequence":(\\d{1,15}),"position":(\\d{1,15}),${CHECKSUM}"data":`,
);

/**
 * The head of a record line, or undefined if the line does not begin as one. Only the beginning is read:
 * the caller checks that the line ends where its data does (with the item's closing brace).
 */
export function recordHead(line: string): RecordHead | undefined {
  const m = RECORD_HEAD.exec(line);
  if (m === null) return undefined;
  return {
    id: stringToken(m[1]!),
    version: Number(m[2]),
    terminal: m[3] === 'true',
    checksum: m[4],
    checksumValue: parseInt(m[4]!, 16),
    dataStart: m[0].length,
  };
}

/** The head of a log entry line, the same way. */
export function entryHead(line: string): EntryHead | undefined {
  const m = ENTRY_HEAD.exec(line);
  if (m === null) return undefined;
  return {
    stream: stringToken(m[1]!),
    sequence: Number(m[2]),
    position: Number(m[3]),
    checksum: m[4],
    checksumValue: parseInt(m[4]!, 16),
    dataStart: m[0].length,
  };
}

/**
 * A JSON string token's value, parsed into a string of its own: a slice of the line would keep the whole
 * line alive for as long as a cold record holds its id, which on a large store more than doubles the heap.
 */
const stringToken = (token: string) => JSON.parse(token) as string;

/**
 * The data text of a whole line (without its trailing comma) whose head is known, or undefined if the line does not
 * end as an item.
 */
export const dataText = (line: string, head: LineHead) =>
  line.endsWith('}') ? line.slice(head.dataStart, -1) : undefined;

/** A record line in the current format (data already encoded). */
export function recordLine(id: string, version: number, terminal: boolean, data: string): string {
  return `${recordPrefix(id, version, terminal, dataChecksum(data))}${data}}`;
}

/** A log entry line in the current format (data already encoded). */
export function entryLine(stream: string, sequence: number, position: number, data: string): string {
  return `${entryPrefix(stream, sequence, position, dataChecksum(data))}${data}}`;
}

/** A record line in the current format around data bytes copied from another file. */
export function recordLineOf(id: string, version: number, terminal: boolean, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(recordPrefix(id, version, terminal, dataChecksum(data))), data, CLOSE_BRACE]);
}

/** A log entry line in the current format around data bytes copied from another file. */
export function entryLineOf(stream: string, sequence: number, position: number, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(entryPrefix(stream, sequence, position, dataChecksum(data))), data, CLOSE_BRACE]);
}

const CLOSE_BRACE = Buffer.from('}');
const recordPrefix = (id: string, version: number, terminal: boolean, checksum: string) =>
  `${JSON.stringify(id)}:{"version":${version},"terminal":${terminal},"crc32":"${checksum}","data":`;
const entryPrefix = (stream: string, sequence: number, position: number, checksum: string) =>
  `{"stream":${JSON.stringify(stream)},"sequence":${sequence},"position":${position},"crc32":"${checksum}","data":`;

/** Data as a line holds it; `undefined` (which JSON cannot hold) is kept as null rather than leaving the field out. */
export const encodeData = (data: unknown) => JSON.stringify(data) ?? 'null';
