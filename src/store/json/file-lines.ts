import type { FileHandle } from 'node:fs/promises';

/**
 * Bytes read at a time: bounds what reading a file holds besides what its reader keeps. A chunk's lines
 * live until the reader is done with them, so a scavenge in between promotes them; smaller chunks kept a
 * large store's open leaner and no slower (bench/README.md, Store design notes).
 */
const READ_CHUNK_BYTES = 512 * 1024;
const NEWLINE_BYTE = 0x0a;

/** One chunk's worth of a file's lines, in order. */
export interface LineBatch {
  lines: string[];
  /** Each line's length in the file, in bytes, without its newline. */
  bytes: number[];
  /** Set on the last batch when the file's last line has no newline (a write cut short, for a journal). */
  unterminated?: true;
}

/**
 * A file's lines, decoded from chunks of {@link READ_CHUNK_BYTES} and yielded a chunk's worth at a time (an
 * await per line would cost more than parsing it), so no string of the whole file ever exists. Splitting
 * bytes on newlines is safe in UTF-8 (no multi-byte sequence contains 0x0a). A file ending in a newline
 * yields no empty last line; one that does not yields its last line alone, marked `unterminated`. Reading
 * starts at byte `from` (a journal's groups follow its header).
 */
export async function* fileLines(
  handle: FileHandle,
  chunkBytes = READ_CHUNK_BYTES,
  from = 0,
): AsyncGenerator<LineBatch> {
  let carry: Buffer | undefined;
  const chunk = Buffer.allocUnsafe(chunkBytes);
  for (let position = from; ;) {
    const { bytesRead } = await handle.read(chunk, 0, chunkBytes, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const data = chunk.subarray(0, bytesRead);
    const batch: LineBatch = { lines: [], bytes: [] };
    let start = 0;
    if (carry !== undefined) {
      // Only the line begun in the last chunk is joined: copying whole chunks cost a noticeable share of a load.
      const end = data.indexOf(NEWLINE_BYTE);
      if (end === -1) {
        carry = Buffer.concat([carry, data]);
        continue;
      }
      const line = Buffer.concat([carry, data.subarray(0, end)]);
      batch.lines.push(line.toString('utf8'));
      batch.bytes.push(line.length);
      start = end + 1;
    }
    for (let end = data.indexOf(NEWLINE_BYTE, start); end !== -1; end = data.indexOf(NEWLINE_BYTE, start)) {
      batch.lines.push(data.toString('utf8', start, end));
      batch.bytes.push(end - start);
      start = end + 1;
    }
    if (batch.lines.length > 0) yield batch;
    // Copied: the chunk buffer is reused by the next read.
    carry = start < data.length ? Buffer.from(data.subarray(start)) : undefined;
  }
  if (carry !== undefined) yield { lines: [carry.toString('utf8')], bytes: [carry.length], unterminated: true };
}
