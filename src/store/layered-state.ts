import type { LiveWork, LogEntry, StoredRecord, TimelineEntry, TimelineFilter, TimelineOptions } from './store.js';
import { TimelineIndex } from './timeline.js';
import { LiveWorkIndex } from './live-work.js';
import {
  ColdEntry,
  ColdRecord,
  warmEntries,
  warmRecord,
  type AppendPlacements,
  type ColdFile,
  type FileCut,
  type HeldEntry,
  type HeldRecord,
  type Placement,
} from './cold-lines.js';
import { deepFreeze } from './deep-freeze.js';

/** What one group commit changed: records written (null = removed), log entries appended, and streams trimmed. */
export interface CommittedChanges {
  records: Array<[kind: string, id: string, record: StoredRecord | null]>;
  entries: LogEntry[];
  /** Retention: entries of the stream below this sequence are gone. */
  trims: Array<[stream: string, before: number]>;
}

/** Synchronous view shared by the committed state and the overlays stacked on it. */
export interface StateLayer {
  kinds(): string[];
  getRecord(kind: string, id: string): StoredRecord | undefined;
  /** A record's version and whether it is sealed, without reading its data (which may be on disk). */
  recordMeta(kind: string, id: string): RecordMeta | undefined;
  /** The ids of a kind in string order; shared, never to be mutated by the caller. */
  sortedIds(kind: string): readonly string[];
  /** The live work of a kind (of one automation), in id order: see {@link LiveWorkIndex}. */
  heldLiveWork(kind: string, automationId?: string): LiveWork[];
  /** A page of a kind's timeline: see {@link TimelineIndex}. */
  heldTimeline(kind: string, options: TimelineOptions): TimelineEntry[];
  heldTimelineCounts(kind: string, filter: TimelineFilter): Record<string, number>;
  /** A record's timeline entry as this layer holds it (undefined: none). */
  timelineEntry(kind: string, id: string): TimelineEntry | undefined;
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
export interface SnapshotSource<F extends ColdFile = ColdFile> {
  kinds(): string[];
  recordsOf(kind: string): Iterable<HeldRecord<F>>;
  nextPosition(): number;
  retainedFeed(): Iterable<HeldEntry<F>>;
}

/**
 * The committed state: records by kind and id, streams, and the global feed in commit order. A file store
 * leaves settled history (sealed records, log entries) on disk once a snapshot holds it: those are kept as
 * places in the file and read back when asked for (see cold-lines.ts), so memory holds live state only. `F` is
 * the kind of file the backend leaves them in; a memory store leaves nothing on disk.
 */
export class CommittedState<F extends ColdFile = ColdFile> implements StateLayer, SnapshotSource<F> {
  private readonly records = new Map<string, Map<string, HeldRecord<F>>>();
  private readonly live = new LiveWorkIndex();
  private readonly timeline = new TimelineIndex();
  /** Sorted ids per kind, rebuilt on the next range read after an id came or went (updates keep them). */
  private readonly sorted = new Map<string, string[]>();
  private readonly streams = new Map<string, HeldEntry<F>[]>();
  /** Entries in position order; may still hold trimmed ones (listed in `trimmed`) until the next rebuild. */
  private feed: HeldEntry<F>[] = [];
  private readonly trimmed = new Set<HeldEntry<F>>();
  private positions = 0;
  /** The file cold records and entries are read from. */
  private history: F | undefined;
  /** Recently read cold records, least recently read first. */
  private readonly warm = new Map<ColdRecord<F>, StoredRecord>();

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
  recordsOf(kind: string): Iterable<HeldRecord<F>> {
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
  heldStreamEntries(stream: string): readonly HeldEntry<F>[] {
    return this.streams.get(stream) ?? [];
  }
  nextPosition(): number {
    return this.positions;
  }
  feedAfter(after: number, limit: number): LogEntry[] {
    const out: HeldEntry<F>[] = [];
    for (let i = firstAfter(this.feed, after); i < this.feed.length && out.length < limit; i++) {
      const entry = this.feed[i]!;
      if (!this.trimmed.has(entry)) out.push(entry);
    }
    return warmEntries(out);
  }
  /** Every retained entry in position order (for writing a snapshot). */
  *retainedFeed(): Iterable<HeldEntry<F>> {
    for (const entry of this.feed) if (!this.trimmed.has(entry)) yield entry;
  }

  /**
   * The state as it is now, unaffected by later commits: a snapshot can be written from it while commits go
   * on. Copies references only — records and entries are frozen and replaced, never changed in place.
   */
  pointInTime(): SnapshotSource<F> {
    const records = new Map([...this.records].map(([kind, byId]) => [kind, [...byId.values()]]));
    const feed = [...this.retainedFeed()];
    const next = this.positions;
    return {
      kinds: () => [...records.keys()],
      recordsOf: (kind) => records.get(kind) ?? [],
      nextPosition: () => next,
      retainedFeed: () => feed,
    };
  }

  /** Loads one record as read from durable storage (or committed): a new version replaces the old. */
  loadRecord(record: HeldRecord<F>): void {
    let records = this.records.get(record.kind);
    if (records === undefined) this.records.set(record.kind, (records = new Map()));
    if (!records.has(record.id)) this.sorted.delete(record.kind);
    records.set(record.id, record instanceof ColdRecord ? record : deepFreeze(record));
    // A cold record is sealed history: never live work.
    this.live.update(record.kind, record.id, record instanceof ColdRecord ? undefined : record);
    // A record folded into the file keeps its data: its entry stands. One first met cold is read once.
    if (record instanceof ColdRecord && !this.timeline.has(record.kind, record.id)) {
      if (this.timeline.isBuilt(record.kind)) this.timeline.update(record.kind, record.id, warmRecord(record));
    } else if (!(record instanceof ColdRecord)) this.timeline.update(record.kind, record.id, record);
  }

  /** Removes one record (a delete, or retention's expiry). */
  removeRecord(kind: string, id: string): void {
    if (this.records.get(kind)?.delete(id) === true) this.sorted.delete(kind);
    this.live.update(kind, id, undefined);
    this.timeline.update(kind, id, undefined);
  }
  heldLiveWork(kind: string, automationId?: string): LiveWork[] {
    return this.live.list(kind, automationId);
  }
  heldTimeline(kind: string, options: TimelineOptions): TimelineEntry[] {
    return this.builtTimeline(kind).page(kind, options);
  }
  heldTimelineCounts(kind: string, filter: TimelineFilter): Record<string, number> {
    return this.builtTimeline(kind).counts(kind, filter);
  }
  timelineEntry(kind: string, id: string): TimelineEntry | undefined {
    return this.builtTimeline(kind).entry(kind, id);
  }
  /** The timeline index with `kind` in it: built on the first read, reading sealed records on disk once. */
  private builtTimeline(kind: string): TimelineIndex {
    if (!this.timeline.isBuilt(kind)) {
      const held = this.records.get(kind)?.values() ?? [];
      this.timeline.build(
        kind,
        (function* () {
          for (const record of held) yield record instanceof ColdRecord ? warmRecord(record) : record;
        })(),
      );
    }
    return this.timeline;
  }

  /** Loads one log entry as read from durable storage; entries must arrive in position order. */
  loadEntry(entry: HeldEntry<F>): void {
    if (entry.position < this.positions)
      throw new Error(`log entry at position ${entry.position} arrived after position ${this.positions - 1}`);
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
  attachHistory(file: F): void {
    this.history = file;
  }

  /**
   * After a fold: every sealed record and log entry the new snapshot holds is left on disk in `file` — the
   * cold ones move there (the fold placed them on themselves), the others by `placed` (as the point-in-time
   * copy handed them out, by identity) — and the snapshot before it is closed. Anything replaced, removed or
   * trimmed while the fold wrote is no longer in the state and simply stays out; what was committed
   * meanwhile stays where the journal holds it.
   */
  adoptHistory(file: F, placed: ReadonlyMap<StoredRecord | LogEntry, Placement>): void {
    // Lines of the old snapshot the fold did not write: none, since only a fold or an open makes snapshot
    // lines and the fold wrote every one the state held; counted so the old file is never closed under one.
    let stale = 0;
    for (const byId of this.records.values()) {
      for (const [id, held] of byId) {
        if (held instanceof ColdRecord) {
          if (!held.moveTo(file) && held.file === this.history) stale++;
        } else {
          const at = placed.get(held);
          if (at !== undefined)
            byId.set(id, new ColdRecord(held.kind, held.id, held.version, file, at.offset, at.length));
        }
      }
    }
    // Hot entries become new objects, which their streams must hold too (trimStream finds feed entries by identity).
    const moved = new Map<HeldEntry<F>, ColdEntry<F>>();
    const feed: HeldEntry<F>[] = [];
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
    for (const stream of streams)
      this.streams.set(
        stream,
        this.streams.get(stream)!.map((e) => moved.get(e) ?? e),
      );
    const previous = this.history;
    this.history = file;
    if (previous !== file && stale === 0) previous?.close();
  }

  /**
   * After a journal append (or replay) of a group merged into this state: its sealed records and log
   * entries are left where the journal holds them. Anything the group's own trims already dropped stays
   * as it is (it leaves the feed at its next rebuild).
   */
  leaveInJournal(placed: AppendPlacements<F>): void {
    const { file } = placed;
    for (const [record, at] of placed.records) {
      const byId = this.records.get(record.kind);
      if (byId?.get(record.id) === record)
        byId.set(record.id, new ColdRecord(record.kind, record.id, record.version, file, at.offset, at.length));
    }
    if (placed.entries.length === 0) return;
    const cold = new Map<HeldEntry<F>, ColdEntry<F>>();
    for (const [entry, at] of placed.entries) {
      if (!this.trimmed.has(entry))
        cold.set(entry, new ColdEntry(entry.stream, entry.sequence, entry.position, file, at.offset, at.length));
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
  moveJournalLines(cut: FileCut<F>): void {
    for (const byId of this.records.values()) {
      for (const held of byId.values())
        if (held instanceof ColdRecord && held.file === cut.from) held.shiftTo(cut.to, cut.shift);
    }
    for (const entry of this.feed)
      if (entry instanceof ColdEntry && entry.file === cut.from) entry.shiftTo(cut.to, cut.shift);
  }

  /** Closes the history file (the store is closing; nothing cold can be read after this). */
  closeHistory(): void {
    this.history?.close();
    this.history = undefined;
  }

  /**
   * Drops a stream's entries below sequence `before` (retention). The newest entry stays unless `before` is
   * the head: then the stream is retired whole and reads as never written.
   */
  trimStream(stream: string, before: number): void {
    const entries = this.streams.get(stream);
    if (entries === undefined) return;
    const retired = before >= entries.at(-1)!.sequence + 1;
    const kept = retired ? 0 : 1;
    let dropped = 0;
    while (dropped < entries.length - kept && entries[dropped]!.sequence < before)
      this.trimmed.add(entries[dropped++]!);
    if (retired) this.streams.delete(stream);
    else if (dropped > 0) this.streams.set(stream, entries.slice(dropped));
    if (this.trimmed.size > FEED_REBUILD_SLACK && this.trimmed.size * 4 > this.feed.length) {
      this.feed = this.feed.filter((e) => !this.trimmed.has(e));
      this.trimmed.clear();
    }
  }
}
