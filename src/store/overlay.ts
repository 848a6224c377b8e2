import { warmEntries, type HeldEntry } from './cold-lines.js';
import { deepFreeze, freezeIfPlain } from './deep-freeze.js';
import { byId, exceptHeld, liveWorkOfRecord } from './live-work.js';
import { overlaidCounts, overlaidPage, timelineEntryOf } from './timeline.js';
import { CommittedState, type CommittedChanges, type RecordMeta, type StateLayer } from './layered-state.js';
import {
  LogRetireError,
  LogTrimError,
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type AppendOptions,
  type ListOptions,
  type LiveKind,
  type LiveWork,
  type LiveWorkOptions,
  type LogEntry,
  type LogPosition,
  type PutOptions,
  type ReadLogOptions,
  type RecordVersion,
  type StoredRecord,
  type StoreTransaction,
  type TimelineEntry,
  type TimelineFilter,
  type TimelineKind,
  type TimelineOptions,
} from './store.js';

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

  /** Whether the transaction called {@link routine}: read by the store when it tells its commit listeners. */
  isRoutine = false;

  constructor(private readonly parent: StateLayer) {}

  get isEmpty(): boolean {
    return this.writes.size === 0 && this.appended.length === 0 && this.trims.size === 0;
  }

  routine(): void {
    this.isRoutine = true;
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
  heldLiveWork(kind: string, automationId?: string): LiveWork[] {
    const base = this.parent.heldLiveWork(kind, automationId);
    const own = this.writes.get(kind);
    if (own === undefined) return base;
    const works = new Map(base.map((w) => [w.id, w]));
    for (const [id, record] of own) {
      works.delete(id);
      const work = record === null ? undefined : liveWorkOfRecord(record);
      if (work !== undefined && (automationId === undefined || work.automationId === automationId)) works.set(id, work);
    }
    return [...works.values()].sort(byId);
  }
  heldTimeline(kind: string, options: TimelineOptions): TimelineEntry[] {
    const own = this.writes.get(kind);
    if (own === undefined) return this.parent.heldTimeline(kind, options);
    return overlaidPage((o) => this.parent.heldTimeline(kind, o), own, options);
  }
  heldTimelineCounts(kind: string, filter: TimelineFilter): Record<string, number> {
    const below = this.parent.heldTimelineCounts(kind, filter);
    const own = this.writes.get(kind);
    if (own === undefined) return below;
    return overlaidCounts(below, (id) => this.parent.timelineEntry(kind, id), own, filter);
  }
  timelineEntry(kind: string, id: string): TimelineEntry | undefined {
    const own = this.writes.get(kind)?.get(id);
    if (own === undefined) return this.parent.timelineEntry(kind, id);
    return own === null ? undefined : timelineEntryOf(own);
  }
  streamHead(stream: string): number {
    const own = this.appendedByStream.get(stream)?.at(-1);
    if (own !== undefined) return own.sequence + 1;
    const head = this.parent.streamHead(stream);
    // A trim up to the head is a retirement: the stream reads as never written.
    return (this.trims.get(stream) ?? 0) >= head ? 0 : head;
  }
  /** Whether this layer or one below it (not yet committed) retired `stream`. */
  private retiredInFlight(stream: string): boolean {
    const before = this.trims.get(stream);
    if (before !== undefined && before >= this.parent.streamHead(stream)) return true;
    return this.parent instanceof Overlay && this.parent.retiredInFlight(stream);
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
  async liveWork(kind: LiveKind, options: LiveWorkOptions = {}): Promise<LiveWork[]> {
    return exceptHeld(kind, this.heldLiveWork(kind, options.automationId), options);
  }
  async timeline(kind: TimelineKind, options: TimelineOptions): Promise<TimelineEntry[]> {
    return this.heldTimeline(kind, options);
  }
  async timelineCounts(kind: TimelineKind, filter: TimelineFilter): Promise<Record<string, number>> {
    return this.heldTimelineCounts(kind, filter);
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
      throw StoreConflictError.forVersion(kind, id, options.expectedVersion, currentVersion);
    }
    // Plain data handed over is kept as given, frozen in place; anything else is copied.
    const kept = options.handOver === true && freezeIfPlain(data);
    const record: StoredRecord<T> = deepFreeze({
      kind,
      id,
      version: (currentVersion ?? 0) + 1,
      terminal: options.terminal ?? false,
      data: kept ? data : structuredClone(data),
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

  async append<T>(stream: string, data: T, expectedSequence?: number, options?: AppendOptions): Promise<LogPosition> {
    const sequence = this.streamHead(stream);
    // The journal replays a group's trims after its appends: an entry appended after a retirement in the same
    // commit would vanish with it. The append waits for the retirement to commit (a lost race, run again).
    if (this.retiredInFlight(stream)) throw new StreamSequenceError(stream, expectedSequence ?? 0, sequence);
    if (expectedSequence !== undefined && expectedSequence !== sequence)
      throw new StreamSequenceError(stream, expectedSequence, sequence);
    // Plain data handed over is kept as given, frozen in place (deepFreeze then stops at it); anything else is copied.
    const kept = options?.handOver === true && freezeIfPlain(data);
    const entry: LogEntry<T> = deepFreeze({
      stream,
      sequence,
      position: this.nextPosition(),
      data: kept ? data : structuredClone(data),
    });
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

  async retireLog(stream: string): Promise<number> {
    const entries = this.heldStreamEntries(stream);
    const last = entries.at(-1);
    if (last === undefined) return 0;
    if (last.position === this.nextPosition() - 1) throw new LogRetireError(stream);
    this.trims.set(stream, last.sequence + 1);
    return entries.length;
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
      for (const [kind, writes] of this.writes)
        for (const [id, record] of writes) target.ownWrites(kind).set(id, record);
      for (const entry of this.appended) {
        target.appended.push(entry);
        let own = target.appendedByStream.get(entry.stream);
        if (own === undefined) target.appendedByStream.set(entry.stream, (own = []));
        own.push(entry);
      }
      for (const [stream, before] of this.trims)
        target.trims.set(stream, Math.max(before, target.trims.get(stream) ?? 0));
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
