import type { CommittedChanges } from './json-journal.js';
import {
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type LogEntry,
  type PutOptions,
  type ReadLogOptions,
  type StoredRecord,
  type StoreTransaction,
} from './store.js';

/** Synchronous view shared by the committed state and the overlays stacked on it. */
export interface StateLayer {
  kinds(): string[];
  getRecord(kind: string, id: string): StoredRecord | undefined;
  listRecords(kind: string): StoredRecord[];
  /** Every record of a kind in storage order, without copying the kind's whole collection. */
  recordsOf(kind: string): Iterable<StoredRecord>;
  streamHead(stream: string): number;
  streamEntries(stream: string): readonly LogEntry[];
  feedLength(): number;
  feedSlice(from: number, to: number): LogEntry[];
}

/** Freezes a parsed value all the way down, so a reader cannot mutate what another reader sees. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

function window<T extends { sequence: number }>(entries: readonly T[], options: ReadLogOptions = {}): T[] {
  const from = Math.max(0, (options.after ?? -1) + 1);
  const to = options.limit === undefined ? entries.length : Math.min(entries.length, from + options.limit);
  return entries.slice(from, to);
}

/** The committed state: records by kind and id, streams, and the global feed in commit order. */
export class CommittedState implements StateLayer {
  readonly records = new Map<string, Map<string, StoredRecord>>();
  readonly streams = new Map<string, LogEntry[]>();
  readonly feed: LogEntry[] = [];

  kinds(): string[] {
    return [...this.records.keys()];
  }
  getRecord(kind: string, id: string): StoredRecord | undefined {
    return this.records.get(kind)?.get(id);
  }
  listRecords(kind: string): StoredRecord[] {
    return [...this.recordsOf(kind)];
  }
  recordsOf(kind: string): Iterable<StoredRecord> {
    return this.records.get(kind)?.values() ?? [];
  }
  streamHead(stream: string): number {
    return this.streams.get(stream)?.length ?? 0;
  }
  streamEntries(stream: string): readonly LogEntry[] {
    return this.streams.get(stream) ?? [];
  }
  feedLength(): number {
    return this.feed.length;
  }
  feedSlice(from: number, to: number): LogEntry[] {
    return this.feed.slice(from, to);
  }

  /** Loads one record as read from durable storage. */
  loadRecord(record: StoredRecord): void {
    let byId = this.records.get(record.kind);
    if (byId === undefined) this.records.set(record.kind, (byId = new Map()));
    byId.set(record.id, deepFreeze(record));
  }

  /** Loads one log entry as read from durable storage; entries must arrive in position order. */
  loadEntry(entry: LogEntry): void {
    let entries = this.streams.get(entry.stream);
    if (entries === undefined) this.streams.set(entry.stream, (entries = []));
    entries.push(deepFreeze(entry));
    this.feed.push(entry);
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

  constructor(private readonly parent: StateLayer) {}

  get isEmpty(): boolean {
    return this.writes.size === 0 && this.appended.length === 0;
  }

  kinds(): string[] {
    return [...new Set([...this.parent.kinds(), ...this.writes.keys()])];
  }
  getRecord(kind: string, id: string): StoredRecord | undefined {
    const own = this.writes.get(kind)?.get(id);
    if (own !== undefined) return own ?? undefined;
    return this.parent.getRecord(kind, id);
  }
  listRecords(kind: string): StoredRecord[] {
    return [...this.recordsOf(kind)];
  }
  *recordsOf(kind: string): Iterable<StoredRecord> {
    const own = this.writes.get(kind);
    if (own === undefined) {
      yield* this.parent.recordsOf(kind);
      return;
    }
    for (const record of this.parent.recordsOf(kind)) {
      const replaced = own.get(record.id);
      if (replaced === undefined) yield record;
      else if (replaced !== null) yield replaced;
    }
    for (const [id, record] of own) {
      if (record !== null && this.parent.getRecord(kind, id) === undefined) yield record;
    }
  }
  streamHead(stream: string): number {
    return this.parent.streamHead(stream) + (this.appendedByStream.get(stream)?.length ?? 0);
  }
  streamEntries(stream: string): readonly LogEntry[] {
    const own = this.appendedByStream.get(stream);
    const base = this.parent.streamEntries(stream);
    return own === undefined ? base : [...base, ...own];
  }
  feedLength(): number {
    return this.parent.feedLength() + this.appended.length;
  }
  feedSlice(from: number, to: number): LogEntry[] {
    const baseLength = this.parent.feedLength();
    const fromBase = from < baseLength ? this.parent.feedSlice(from, Math.min(to, baseLength)) : [];
    return [...fromBase, ...this.appended.slice(Math.max(0, from - baseLength), Math.max(0, to - baseLength))];
  }

  async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    return this.getRecord(kind, id) as StoredRecord<T> | undefined;
  }
  async list<T>(kind: string): Promise<Array<StoredRecord<T>>> {
    return this.listRecords(kind).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) as Array<StoredRecord<T>>;
  }
  async head(stream: string): Promise<number> {
    return this.streamHead(stream);
  }
  async readLog<T>(stream: string, options?: ReadLogOptions): Promise<Array<LogEntry<T>>> {
    return window(this.streamEntries(stream), options) as Array<LogEntry<T>>;
  }
  async readFeed<T>(options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const from = Math.max(0, (options.after ?? -1) + 1);
    const to = options.limit === undefined ? this.feedLength() : Math.min(this.feedLength(), from + options.limit);
    return this.feedSlice(from, to) as Array<LogEntry<T>>;
  }

  async put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>> {
    const current = this.getRecord(kind, id);
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
    const current = this.getRecord(kind, id);
    if (current?.terminal) throw new TerminalRecordError(kind, id);
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
    const entry: LogEntry<T> = deepFreeze({ stream, sequence, position: this.feedLength(), data: structuredClone(data) });
    this.appended.push(entry);
    let own = this.appendedByStream.get(stream);
    if (own === undefined) this.appendedByStream.set(stream, (own = []));
    own.push(entry);
    return entry;
  }

  /** Every write (null = deleted) and append of this overlay, in the order a journal replays them. */
  changes(): CommittedChanges {
    const records: CommittedChanges['records'] = [];
    for (const [kind, byId] of this.writes) for (const [id, record] of byId) records.push([kind, id, record]);
    return { records, entries: [...this.appended] };
  }

  /** Moves every write and append into `target`, which must be this overlay's parent. */
  mergeInto(target: Overlay | CommittedState): void {
    if (target instanceof Overlay) {
      for (const [kind, byId] of this.writes) for (const [id, record] of byId) target.ownWrites(kind).set(id, record);
      for (const entry of this.appended) {
        target.appended.push(entry);
        let own = target.appendedByStream.get(entry.stream);
        if (own === undefined) target.appendedByStream.set(entry.stream, (own = []));
        own.push(entry);
      }
      return;
    }
    for (const [kind, byId] of this.writes) {
      let committed = target.records.get(kind);
      if (committed === undefined) target.records.set(kind, (committed = new Map()));
      for (const [id, record] of byId) {
        if (record === null) committed.delete(id);
        else committed.set(id, record);
      }
    }
    for (const entry of this.appended) target.loadEntry(entry);
  }

  private ownWrites(kind: string): Map<string, StoredRecord | null> {
    let byId = this.writes.get(kind);
    if (byId === undefined) this.writes.set(kind, (byId = new Map()));
    return byId;
  }
}
