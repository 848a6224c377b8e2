import type { FileHandle } from 'node:fs/promises';

/**
 * Which journal a JSON store's snapshot expects beside it. Every fold writes a snapshot naming the next
 * generation and then a journal whose first line names the same store and generation (even when nothing
 * follows it), so at open a journal that is missing, another store's, or of another generation is found
 * out instead of being taken for "no commits since the fold".
 */
export interface JournalIdentity {
  readonly storeId: string;
  readonly generation: number;
}

export const JOURNAL_FORMAT = 'coven-automata/json-journal';
const HEADER_START = Buffer.from('{"journal":');
/** A header is far shorter; a first line that does not end within this is not one. */
const HEADER_MAX_BYTES = 1_024;

/**
 * The header's `checksums` field: every group line of the journal carries a CRC-32 (`journal-groups.ts`).
 * Journals without it were written before group checksums; their groups cannot be verified.
 */
const GROUP_CHECKSUMS = 'crc32';
const HEADER_KEYS = ['journal', 'storeId', 'generation', 'checksums'];

export const journalHeaderLine = (identity: JournalIdentity) =>
  `${JSON.stringify({
    journal: JOURNAL_FORMAT,
    storeId: identity.storeId,
    generation: identity.generation,
    checksums: GROUP_CHECKSUMS,
  })}\n`;

export const isJournalIdentity = (v: unknown): v is JournalIdentity =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as JournalIdentity).storeId === 'string' &&
  (v as JournalIdentity).storeId.length > 0 &&
  Number.isSafeInteger((v as JournalIdentity).generation) &&
  (v as JournalIdentity).generation >= 1;

/** What a journal's first line says: which journal it is, and whether its groups carry checksums. */
export interface JournalHeader {
  /** Undefined: a journal written before headers (beside a snapshot of format 5 or older). */
  identity: JournalIdentity | undefined;
  /** The header's length in bytes: where the groups start (0 without a header). */
  bytes: number;
  checksummed: boolean;
}

/**
 * The journal's header. A journal written before headers has none, and its groups start at byte 0. A header
 * is read strictly (no field missing, none unknown, `checksums` only as this build writes it), so a changed
 * byte in it cannot turn a checksummed journal into one read without checksums.
 */
export async function readJournalHeader(handle: FileHandle): Promise<JournalHeader> {
  const buffer = Buffer.alloc(HEADER_MAX_BYTES);
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
  const text = buffer.subarray(0, bytesRead);
  if (!text.subarray(0, HEADER_START.length).equals(HEADER_START))
    return { identity: undefined, bytes: 0, checksummed: false };
  const end = text.indexOf(0x0a);
  let header: unknown;
  try {
    header = end === -1 ? undefined : JSON.parse(text.toString('utf8', 0, end));
  } catch {
    header = undefined;
  }
  const { journal, checksums, ...identity } = (header ?? {}) as { journal?: unknown; checksums?: unknown };
  if (
    journal !== JOURNAL_FORMAT ||
    !isJournalIdentity(identity) ||
    Object.keys(header as object).some((key) => !HEADER_KEYS.includes(key)) ||
    (checksums !== undefined && checksums !== GROUP_CHECKSUMS)
  )
    throw new Error('its first line is not a well-formed journal header');
  return {
    identity: { storeId: identity.storeId, generation: identity.generation },
    bytes: end + 1,
    checksummed: checksums !== undefined,
  };
}

const describe = (identity: JournalIdentity | undefined) =>
  identity === undefined
    ? 'a journal without a header (written before journal generations)'
    : `generation ${identity.generation} of store ${identity.storeId}`;

/**
 * Checks the journal found against the one the snapshot expects; throws why it cannot be the store's.
 * Returns true when the journal is the generation before the expected one, which a crash between a fold's
 * snapshot and its journal leaves: the caller accepts it only if it still holds the last group the snapshot
 * folded from it. A snapshot from before generations (`expected` undefined) takes only a journal without a header.
 */
export function journalBehind(found: JournalIdentity | undefined, expected: JournalIdentity | undefined): boolean {
  if (expected === undefined) {
    if (found === undefined) return false;
    throw new Error(
      `the journal is ${describe(found)}, but the snapshot is of a format before journal generations: ` +
        'the snapshot is not the one this journal follows',
    );
  }
  const generation = found?.generation ?? 0;
  if (found !== undefined && found.storeId !== expected.storeId)
    throw new Error(`the journal is ${describe(found)}, another store's; the snapshot expects ${describe(expected)}`);
  if (generation === expected.generation) return false;
  if (generation === expected.generation - 1) return true;
  throw new Error(
    `the journal is ${describe(found)}, but the snapshot expects ${describe(expected)}: ` +
      'one of the two files was replaced by another copy',
  );
}
