import type { CommittedChanges, JournalCut } from './json-journal.js';
import {
  LogTrimError,
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type ListOptions,
  type LogEntry,
  type PutOptions,
  type ReadLogOptions,
  type RecordVersion,
  type StoredRecord,
  type StoreTransaction,
} from './store.js';
import { ColdEntry, ColdRecord, warmEntries, warmRecord, type HeldEntry, type HeldRecord, type HistoryFile, type JournalPlacements, type Placement } from './cold-history.js';
import { deepFreeze } from './deep-freeze.js';

/** Synchronous view shared by the committed state and the overlays stacked on it. */
export interface StateLayer {
  kinds(): string[];
  getRecord(kind: string, id: string): StoredRecord | undefined;
  /** A record's version and whether it is sealed, without reading its data (which may be on disk). */
  recordMeta(kind: string, id: string): RecordMeta | undefined;
  /** The ids of a kind in string order; shared, never to be mutated by the caller. */
  sortedIds(kind: string): readonly string[];
  streamHead(stream: string): number;
  /** The stream's retained entries as held, oldest first (retention may have trimmed a prefix; some may be cold). */
  heldStreamEntries(stream: string): readonly HeldEntry[];
  /** The position the next appended entry gets: positions only grow, even across trims. */
  nextPosition(): number;
  /** Retained entries with a position above `after`, in position order, at most `limit`. */
  feedAfter(after: number, limit: number): LogEntry[];
}

/** What compare-and-set and sealing need of a record. */
export interface RecordMeta {
  readonly version: number;
  readonly terminal: boolean;
}

/** Entries of one stream after `after` (a sequence); the retained entries may start past sequence 0. */
function window<T extends { sequence: number }>(entries: readonly T[], options: ReadLogOptions = {}): T[] {
  const base = entries[0]?.sequence ?? 0;
  const from = Math.max(0, (options.after ?? -1) + 1 - base);
  const to = options.limit === undefined ? entries.length : Math.min(entries.length, from + options.limit);
  return entries.slice(from, to);
}

/** In sorted `ids`, the first index past `id` (`after`), or the first at or past it (not `after`). */
function boundary(ids: readonly string[], id: string, after: boolean): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < id || (after && ids[mid] === id)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose entry's position is above `after` (entries sorted by position). */
function firstAfter(entries: ReadonlyArray<{ readonly position: number }>, after: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid]!.position <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Sealed records read back from disk kept for the next read: a few are read on every dispatch (the pinned
 * definition revision), which would otherwise cost a read and a parse each time. A sealed record never
 * changes, so a kept copy never goes stale.
 */
const WARM_RECORDS_KEPT = 256;

/** Trimmed entries the feed array may carry before it is rebuilt without them (amortises the rebuild). */
const FEED_REBUILD_SLACK = 4096;

/**
 * What a snapshot file is written from: every record by kind, the retained feed, and the next position.
 * Records and entries may be cold (still in the file the state was loaded or last folded from).
 */
export interface SnapshotSource {
  kinds(): string[];
  recordsOf(kind: string): Iterable<HeldRecord>;
  nextPosition(): number;
  retainedFeed(): Iterable<HeldEntry>;
}

/**
 * The committed state: records by kind and id, streams, and the global feed in commit order. A file store
 * leaves settled history (sealed records, log entries) on disk once a snapshot holds it: those are kept as
 * places in the file and read back when asked for (see cold-history.ts), so memory holds live state only.
 */
export class CommittedState implements StateLayer, SnapshotSource {
  private readonly records = new Map<string, Map<string, HeldRecord>>();
  /** Sorted ids per kind, rebuilt on the next range read after an id came or went (updates keep them). */
  private readonly sorted = new Map<string, string[]>();
  private readonly streams = new Map<string, HeldEntry[]>();
  /** Entries in position order; may still hold trimmed ones (listed in `trimmed`) until the next rebuild. */
  private feed: HeldEntry[] = [];
  private readonly trimmed = new Set<HeldEntry>();
  private positions = 0;
  /** The file cold records and entries are read from. */
  private history: HistoryFile | undefined;
  /** Recently read cold records, least recently read first. */
  private readonly warm = new Map<ColdRecord, StoredRecord>();

  kinds(): string[] {
    return [...this.records.keys()];
  }
  getRecord(kind: string, id: string): StoredRecord | undefined {
    const held = this.records.get(kind)?.get(id);
    if (!(held instanceof ColdRecord)) return held;
    let record = this.warm.get(held);
    if (record === undefined) {
      record = warmRecord(held);
      if (this.warm.size >= WARM_RECORDS_KEPT) this.warm.delete(this.warm.keys().next().value!);
    } else this.warm.delete(held);
    this.warm.set(held, record);
    return record;
  }
  recordMeta(kind: string, id: string): RecordMeta | undefined {
    return this.records.get(kind)?.get(id);
  }
  /** Every record of a kind in storage order, without copying the kind's whole collection (for a snapshot). */
  recordsOf(kind: string): Iterable<HeldRecord> {
    return this.records.get(kind)?.values() ?? [];
  }
  sortedIds(kind: string): readonly string[] {
    let ids = this.sorted.get(kind);
    if (ids === undefined) {
      ids = [...(this.records.get(kind)?.keys() ?? [])].sort();
      this.sorted.set(kind, ids);
    }
    return ids;
  }
  streamHead(stream: string): number {
    const last = this.streams.get(stream)?.at(-1);
    return last === undefined ? 0 : last.sequence + 1;
  }
  heldStreamEntries(stream: string): readonly HeldEntry[] {
    return this.streams.get(stream) ?? [];
  }
  nextPosition(): number {
    return this.positions;
  }
  feedAfter(after: number, limit: number): LogEntry[] {
    const out: HeldEntry[] = [];
    for (let i = firstAfter(this.feed, after); i < this.feed.length && out.length < limit; i++) {
      const entry = this.feed[i]!;
      if (!this.trimmed.has(entry)) out.push(entry);
    }
    return warmEntries(out);
  }
  /** Every retained entry in position order (for writing a snapshot). */
  *retainedFeed(): Iterable<HeldEntry> {
    for (const entry of this.feed) if (!this.trimmed.has(entry)) yield entry;
  }

  /**
   * The state as it is now, unaffected by later commits: a snapshot can be written from it while commits go
   * on. Copies references only — records and entries are frozen and replaced, never changed in place.
   */
  pointInTime(): SnapshotSource {
    const records = new Map([...this.records].map(([kind, byId]) => [kind, [...byId.values()]]));
    const feed = [...this.retainedFeed()];
    const next = this.positions;
    return { kinds: () => [...records.keys()], recordsOf: (kind) => records.get(kind) ?? [], nextPosition: () => next, retainedFeed: () => feed };
  }

  /** Loads one record as read from durable storage (or committed): a new version replaces the old. */
  loadRecord(record: HeldRecord): void {
    let records = this.records.get(record.kind);
    if (records === undefined) this.records.set(record.kind, (records = new Map()));
    if (!records.has(record.id)) this.sorted.delete(record.kind);
    records.set(record.id, record instanceof ColdRecord ? record : deepFreeze(record));
  }

  /** Removes one record (a delete, or retention's expiry). */
  removeRecord(kind: string, id: string): void {
    if (this.records.get(kind)?.delete(id) === true) this.sorted.delete(kind);
  }

  /** Loads one log entry as read from durable storage; entries must arrive in position order. */
  loadEntry(entry: HeldEntry): void {
    if (entry.position < this.positions) throw new Error(`log entry at position ${entry.position} arrived after position ${this.positions - 1}`);
    let entries = this.streams.get(entry.stream);
    if (entries === undefined) this.streams.set(entry.stream, (entries = []));
    const frozen = entry instanceof ColdEntry ? entry : deepFreeze(entry);
    entries.push(frozen);
    this.feed.push(frozen);
    this.positions = entry.position + 1;
  }

  /** Positions given out before the snapshot's retained entries (as a snapshot file records them). */
  advancePositions(next: number): void {
    this.positions = Math.max(this.positions, next);
  }

  /** Cold records and entries of this state are read from `file` (the snapshot it was loaded from). */
  attachHistory(file: HistoryFile): void {
    this.history = file;
  }

  /**
   * After a fold: every sealed record and log entry the new snapshot holds is left on disk in `file` — the
   * cold ones move there (the fold placed them on themselves), the others by `placed` (as the point-in-time
   * copy handed them out, by identity) — and the snapshot before it is closed. Anything replaced, removed or
   * trimmed while the fold wrote is no longer in the state and simply stays out; what was committed
   * meanwhile stays where the journal holds it.
   */
  adoptHistory(file: HistoryFile, placed: ReadonlyMap<StoredRecord | LogEntry, Placement>): void {
    // Lines of the old snapshot the fold did not write: none, since only a fold or an open makes snapshot
    // lines and the fold wrote every one the state held; counted so the old file is never closed under one.
    let stale = 0;
    for (const byId of this.records.values()) {
      for (const [id, held] of byId) {
        if (held instanceof ColdRecord) {
          if (!held.moveTo(file) && held.file === this.history) stale++;
        } else {
          const at = placed.get(held);
          if (at !== undefined) byId.set(id, new ColdRecord(held.kind, held.id, held.version, file, at.offset, at.length));
        }
      }
    }
    // Hot entries become new objects, which their streams must hold too (trimStream finds feed entries by identity).
    const moved = new Map<HeldEntry, ColdEntry>();
    const feed: HeldEntry[] = [];
    for (const entry of this.feed) {
      if (this.trimmed.size > 0 && this.trimmed.has(entry)) continue;
      if (entry instanceof ColdEntry) {
        if (!entry.moveTo(file) && entry.file === this.history) stale++;
        feed.push(entry);
        continue;
      }
      const at = placed.get(entry);
      if (at === undefined) feed.push(entry);
      else {
        const cold = new ColdEntry(entry.stream, entry.sequence, entry.position, file, at.offset, at.length);
        moved.set(entry, cold);
        feed.push(cold);
      }
    }
    this.feed = feed;
    this.trimmed.clear();
    const streams = new Set([...moved.keys()].map((e) => e.stream));
    for (const stream of streams) this.streams.set(stream, this.streams.get(stream)!.map((e) => moved.get(e) ?? e));
    const previous = this.history;
    this.history = file;
    if (previous !== file && stale === 0) previous?.close();
  }

  /**
   * After a journal append (or replay) of a group merged into this state: its sealed records and log
   * entries are left where the journal holds them. Anything the group's own trims already dropped stays
   * as it is (it leaves the feed at its next rebuild).
   */
  leaveInJournal(placed: JournalPlacements): void {
    const { file } = placed;
    for (const [record, at] of placed.records) {
      const byId = this.records.get(record.kind);
      if (byId?.get(record.id) === record) byId.set(record.id, new ColdRecord(record.kind, record.id, record.version, file, at.offset, at.length));
    }
    if (placed.entries.length === 0) return;
    const cold = new Map<HeldEntry, ColdEntry>();
    for (const [entry, at] of placed.entries) {
      if (!this.trimmed.has(entry)) cold.set(entry, new ColdEntry(entry.stream, entry.sequence, entry.position, file, at.offset, at.length));
    }
    // The group's entries are the newest: look for them from the end of the feed and of each stream.
    let left = cold.size;
    for (let i = this.feed.length - 1; i >= 0 && left > 0; i--) {
      const next = cold.get(this.feed[i]!);
      if (next !== undefined) {
        this.feed[i] = next;
        left--;
      }
    }
    for (const stream of new Set(placed.entries.map(([e]) => e.stream))) {
      const entries = this.streams.get(stream);
      if (entries === undefined) continue;
      for (let i = entries.length - 1; i >= 0; i--) {
        const next = cold.get(entries[i]!);
        if (next === undefined) break;
        entries[i] = next;
      }
    }
  }

  /** A journal cut: what the state left in `cut.from` is read from `cut.to`, `cut.shift` bytes earlier. */
  moveJournalLines(cut: JournalCut): void {
    for (const byId of this.records.values()) {
      for (const held of byId.values()) if (held instanceof ColdRecord && held.file === cut.from) held.shiftTo(cut.to, cut.shift);
    }
    for (const entry of this.feed) if (entry instanceof ColdEntry && entry.file === cut.from) entry.shiftTo(cut.to, cut.shift);
  }

  /** Closes the history file (the store is closing; nothing cold can be read after this). */
  closeHistory(): void {
    this.history?.close();
    this.history = undefined;
  }

  /** Drops a stream's entries below sequence `before` (retention); the newest entry always stays. */
  trimStream(stream: string, before: number): void {
    const entries = this.streams.get(stream);
    if (entries === undefined) return;
    let dropped = 0;
    while (dropped < entries.length - 1 && entries[dropped]!.sequence < before) this.trimmed.add(entries[dropped++]!);
    if (dropped > 0) this.streams.set(stream, entries.slice(dropped));
    if (this.trimmed.size > FEED_REBUILD_SLACK && this.trimmed.size * 4 > this.feed.length) {
      this.feed = this.feed.filter((e) => !this.trimmed.has(e));
      this.trimmed.clear();
    }
  }
}

/**
 * The uncommitted writes of one transaction (or of one group of transactions), stacked on a parent
 * layer. Nothing reaches the parent until {@link Overlay.mergeInto} runs, so a failing body costs nothing.
 */
export class Overlay implements StateLayer, StoreTransaction {
  private readonly writes = new Map<string, Map<string, StoredRecord | null>>();
  private readonly appended: LogEntry[] = [];
  private readonly appendedByStream = new Map<string, LogEntry[]>();
  /** Retention trims of this overlay: stream → entries below this sequence are gone. */
  private readonly trims = new Map<string, number>();

  constructor(private readonly parent: StateLayer) {}

  get isEmpty(): boolean {
    return this.writes.size === 0 && this.appended.length === 0 && this.trims.size === 0;
  }

  kinds(): string[] {
    return [...new Set([...this.parent.kinds(), ...this.writes.keys()])];
  }
  getRecord(kind: string, id: string): StoredRecord | undefined {
    const own = this.writes.get(kind)?.get(id);
    if (own !== undefined) return own ?? undefined;
    return this.parent.getRecord(kind, id);
  }
  recordMeta(kind: string, id: string): RecordMeta | undefined {
    const own = this.writes.get(kind)?.get(id);
    if (own !== undefined) return own ?? undefined;
    return this.parent.recordMeta(kind, id);
  }
  sortedIds(kind: string): readonly string[] {
    const own = this.writes.get(kind);
    const base = this.parent.sortedIds(kind);
    if (own === undefined) return base;
    const ids = new Set(base);
    for (const [id, record] of own) {
      if (record === null) ids.delete(id);
      else ids.add(id);
    }
    return [...ids].sort();
  }
  streamHead(stream: string): number {
    const own = this.appendedByStream.get(stream)?.at(-1);
    return own === undefined ? this.parent.streamHead(stream) : own.sequence + 1;
  }
  heldStreamEntries(stream: string): readonly HeldEntry[] {
    const own = this.appendedByStream.get(stream) ?? [];
    const all = [...this.parent.heldStreamEntries(stream), ...own];
    const before = this.trims.get(stream);
    return before === undefined ? all : all.filter((e) => e.sequence >= before);
  }
  nextPosition(): number {
    return this.parent.nextPosition() + this.appended.length;
  }
  feedAfter(after: number, limit: number): LogEntry[] {
    const out: LogEntry[] = [];
    // Trims of this overlay hide parent entries; ask for enough to fill the page after hiding them.
    let cursor = after;
    while (out.length < limit) {
      const page = this.parent.feedAfter(cursor, limit - out.length);
      if (page.length === 0) break;
      for (const entry of page) if (!this.isTrimmed(entry)) out.push(entry);
      cursor = page.at(-1)!.position;
    }
    for (const entry of this.appended) {
      if (out.length >= limit) break;
      if (entry.position > after && !this.isTrimmed(entry)) out.push(entry);
    }
    return out;
  }

  private isTrimmed(entry: LogEntry): boolean {
    const before = this.trims.get(entry.stream);
    return before !== undefined && entry.sequence < before;
  }

  async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    return this.getRecord(kind, id) as StoredRecord<T> | undefined;
  }
  async version(kind: string, id: string): Promise<number | undefined> {
    return this.recordMeta(kind, id)?.version;
  }
  async list<T>(kind: string, options: ListOptions = {}): Promise<Array<StoredRecord<T>>> {
    const ids = this.sortedIds(kind);
    const from = options.after === undefined ? 0 : boundary(ids, options.after, true);
    const to = options.before === undefined ? ids.length : boundary(ids, options.before, false);
    const end = options.limit === undefined ? to : Math.min(to, from + options.limit);
    const out: Array<StoredRecord<T>> = [];
    for (let i = from; i < end; i++) out.push(this.getRecord(kind, ids[i]!) as StoredRecord<T>);
    return out;
  }
  async versions(kind: string, options: ListOptions = {}): Promise<RecordVersion[]> {
    const ids = this.sortedIds(kind);
    const from = options.after === undefined ? 0 : boundary(ids, options.after, true);
    const to = options.before === undefined ? ids.length : boundary(ids, options.before, false);
    const end = options.limit === undefined ? to : Math.min(to, from + options.limit);
    const out: RecordVersion[] = [];
    for (let i = from; i < end; i++) out.push({ id: ids[i]!, version: this.recordMeta(kind, ids[i]!)!.version });
    return out;
  }
  async head(stream: string): Promise<number> {
    return this.streamHead(stream);
  }
  async readLog<T>(stream: string, options?: ReadLogOptions): Promise<Array<LogEntry<T>>> {
    return warmEntries(window(this.heldStreamEntries(stream), options)) as Array<LogEntry<T>>;
  }
  async readFeed<T>(options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    return this.feedAfter(options.after ?? -1, options.limit ?? Number.POSITIVE_INFINITY) as Array<LogEntry<T>>;
  }

  async put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>> {
    const current = this.recordMeta(kind, id);
    if (current?.terminal) throw new TerminalRecordError(kind, id);
    const currentVersion = current?.version ?? null;
    if (currentVersion !== options.expectedVersion) {
      throw new StoreConflictError(
        current === undefined
          ? `${kind} ${id} does not exist (expected version ${String(options.expectedVersion)})`
          : `${kind} ${id} is at version ${current.version}, not ${String(options.expectedVersion)}`,
        { kind, id, expectedVersion: options.expectedVersion, currentVersion },
      );
    }
    const record: StoredRecord<T> = deepFreeze({
      kind,
      id,
      version: (currentVersion ?? 0) + 1,
      terminal: options.terminal ?? false,
      data: structuredClone(data),
    });
    this.ownWrites(kind).set(id, record);
    return record;
  }

  async delete(kind: string, id: string, expectedVersion: number): Promise<void> {
    const current = this.recordMeta(kind, id);
    if (current?.terminal) throw new TerminalRecordError(kind, id);
    this.remove(kind, id, current, expectedVersion);
  }

  async expire(kind: string, id: string, expectedVersion: number): Promise<void> {
    this.remove(kind, id, this.recordMeta(kind, id), expectedVersion);
  }

  private remove(kind: string, id: string, current: RecordMeta | undefined, expectedVersion: number): void {
    if (current?.version !== expectedVersion) {
      throw new StoreConflictError(`${kind} ${id} is not at version ${expectedVersion}`, {
        kind,
        id,
        expectedVersion,
        currentVersion: current?.version ?? null,
      });
    }
    this.ownWrites(kind).set(id, null);
  }

  async append<T>(stream: string, data: T, expectedSequence?: number): Promise<LogEntry<T>> {
    const sequence = this.streamHead(stream);
    if (expectedSequence !== undefined && expectedSequence !== sequence) throw new StreamSequenceError(stream, expectedSequence, sequence);
    const entry: LogEntry<T> = deepFreeze({ stream, sequence, position: this.nextPosition(), data: structuredClone(data) });
    this.appended.push(entry);
    let own = this.appendedByStream.get(stream);
    if (own === undefined) this.appendedByStream.set(stream, (own = []));
    own.push(entry);
    return entry;
  }

  async trimLog(stream: string, before: number): Promise<number> {
    const head = this.streamHead(stream);
    if (before > head - 1) throw new LogTrimError(stream, before, head);
    const dropped = this.heldStreamEntries(stream).filter((e) => e.sequence < before).length;
    if (dropped > 0) this.trims.set(stream, Math.max(before, this.trims.get(stream) ?? 0));
    return dropped;
  }

  /** Every write (null = removed), append and trim of this overlay, in the order a journal replays them. */
  changes(): CommittedChanges {
    const records: CommittedChanges['records'] = [];
    for (const [kind, writes] of this.writes) for (const [id, record] of writes) records.push([kind, id, record]);
    return { records, entries: [...this.appended], trims: [...this.trims] };
  }

  /** Moves every write, append and trim into `target`, which must be this overlay's parent. */
  mergeInto(target: Overlay | CommittedState): void {
    if (target instanceof Overlay) {
      for (const [kind, writes] of this.writes) for (const [id, record] of writes) target.ownWrites(kind).set(id, record);
      for (const entry of this.appended) {
        target.appended.push(entry);
        let own = target.appendedByStream.get(entry.stream);
        if (own === undefined) target.appendedByStream.set(entry.stream, (own = []));
        own.push(entry);
      }
      for (const [stream, before] of this.trims) target.trims.set(stream, Math.max(before, target.trims.get(stream) ?? 0));
      return;
    }
    for (const [kind, writes] of this.writes) {
      for (const [id, record] of writes) {
        if (record === null) target.removeRecord(kind, id);
        else target.loadRecord(record);
      }
    }
    for (const entry of this.appended) target.loadEntry(entry);
    for (const [stream, before] of this.trims) target.trimStream(stream, before);
  }

  private ownWrites(kind: string): Map<string, StoredRecord | null> {
    let writes = this.writes.get(kind);
    if (writes === undefined) this.writes.set(kind, (writes = new Map()));
    return writes;
  }
}
