import type { StoredRecord } from '../store.js';
import type { Prefetched } from './prefetch.js';

/**
 * A record as this store last committed or read it: the record (undefined: absent) and, when present, the `xmin`
 * of its row (the transaction that wrote that row version; with the version, it tells a row deleted and written
 * again from the one remembered).
 */
export interface RememberedRecord {
  readonly record: StoredRecord<unknown> | undefined;
  readonly xmin: string | null;
}

/** How many records and stream heads a store remembers: a launch's answer comes moments after its adoption. */
const CAPACITY = 2048;

const keyOf = (kind: string, id: string) => `${kind}\u0000${id}`;

/** A map that forgets its least recently set entries past {@link CAPACITY}. */
class Recent<V> {
  private readonly entries = new Map<string, V>();
  get(key: string): V | undefined {
    return this.entries.get(key);
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > CAPACITY) this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * What one PostgreSQL store committed and read last: records with their row's `xmin`, and the next sequence of the
 * streams it appended to. A hint, never the truth: a step that answers its reads from here (a launch's answer,
 * which reads what the adoption before it committed) has its writes check, in the statement that sends them, that
 * every row it relied on is still that row and every stream still at that head, and runs again reading the
 * database when one is not (see {@link RecentCommitsStep}).
 */
export class OwnCommits {
  private readonly records = new Recent<RememberedRecord>();
  private readonly heads = new Recent<number>();

  record(kind: string, id: string): RememberedRecord | undefined {
    return this.records.get(keyOf(kind, id));
  }
  head(stream: string): number | undefined {
    return this.heads.get(stream);
  }
  rememberRecord(kind: string, id: string, record: StoredRecord<unknown> | undefined, xmin: string | null): void {
    this.records.set(keyOf(kind, id), { record, xmin: record === undefined ? null : xmin });
  }
  rememberHead(stream: string, next: number): void {
    this.heads.set(stream, next);
  }
}

/**
 * What a step answered from the store's memory instead of reading: each record (absent, or at a row version and
 * `xmin`) and stream head the database must still hold when the step writes.
 */
export class RecentCommitsStep {
  private constructor(
    readonly records: ReadonlyArray<{ kind: string; id: string; record: StoredRecord<unknown> | undefined }>,
    readonly heads: ReadonlyArray<{ stream: string; next: number }>,
    readonly expected: Expected,
  ) {}

  /** The step's reads answered from `own`, or undefined when it does not remember them all. */
  static answer(
    own: OwnCommits,
    keys: ReadonlyArray<readonly [kind: string, id: string]>,
    streams: readonly string[],
    absentUnlessRemembered: ReadonlyArray<readonly [kind: string, id: string]> = [],
  ): RecentCommitsStep | undefined {
    const mayBeAbsent = new Set(absentUnlessRemembered.map(([kind, id]) => keyOf(kind, id)));
    const records: Array<{ kind: string; id: string; record: StoredRecord<unknown> | undefined }> = [];
    const expected: Array<Expected['records'][number]> = [];
    for (const [kind, id] of keys) {
      const remembered = own.record(kind, id);
      if (remembered === undefined && !mayBeAbsent.has(keyOf(kind, id))) return undefined;
      const record = remembered?.record;
      records.push({ kind, id, record });
      expected.push({ kind, id, version: record?.version ?? null, xmin: remembered?.xmin ?? null });
    }
    const heads: Array<{ stream: string; next: number }> = [];
    for (const stream of streams) {
      const next = own.head(stream);
      if (next === undefined) return undefined;
      heads.push({ stream, next });
    }
    return new RecentCommitsStep(records, heads, { records: expected, heads });
  }

  /** The records and streams to read when the step needs the database after all. */
  get keys(): Array<readonly [kind: string, id: string]> {
    return this.records.map(({ kind, id }) => [kind, id] as const);
  }
  get streams(): string[] {
    return this.heads.map(({ stream }) => stream);
  }

  /** Whether what the database holds (`found`, read for {@link keys} and {@link streams}) is what the step used. */
  unchanged(found: Prefetched): boolean {
    const rows = new Map(found.records.map((row) => [keyOf(row.kind, row.id), row]));
    const sameRecords = this.expected.records.every(({ kind, id, version, xmin }) => {
      const row = rows.get(keyOf(kind, id));
      return version === null ? row === undefined : row?.version === version && row.xmin === xmin;
    });
    return sameRecords && this.heads.every(({ stream, next }) => found.heads.get(stream) === next);
  }
}

/** A row or stream head a step relied on without reading it: what the database must still hold when it writes. */
export interface Expected {
  readonly records: ReadonlyArray<{ kind: string; id: string; version: number | null; xmin: string | null }>;
  readonly heads: ReadonlyArray<{ stream: string; next: number }>;
}

/** The step relied on something the database no longer holds: run it again, reading the database first. */
export class StaleOwnCommits extends Error {
  constructor() {
    super('what this store remembered of its own commits changed underneath; the step runs again');
    this.name = 'StaleOwnCommits';
  }
}

/** The 32-bit `xmin` of rows a transaction with this `xid8` wrote, as the `xmin` column reads in text. */
export const xminOf = (xid: bigint): string => String(xid % 4_294_967_296n);
