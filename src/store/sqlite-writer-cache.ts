import type { StoredRecord } from './store.js';

/** Records (or their absence) the writer remembers: a burst's working set, ≈ 64 items × their 6–10 records. */
export const REMEMBERED_RECORDS = 2_048;
/** Streams whose next sequence the writer remembers; beyond either bound the least recently used is read again. */
export const REMEMBERED_STREAMS = 4_096;

/** A map that forgets its least recently used entry beyond `limit`. */
class Recent<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value!);
  }
  clear(): void {
    this.entries.clear();
  }
}

/**
 * What the SQLite writer connection remembers between statements: recently read or written records (frozen,
 * so shared safely), each stream's next sequence and the feed's next position. It is exact because the
 * writer is the only connection that writes while the store's lock is held; the store forgets all of it
 * whenever anything rolls back or another connection committed (`PRAGMA data_version` moved).
 * A transaction's repeated reads of an occurrence, run or attempt then cost neither a query nor a parse.
 */
export class WriterCache {
  private readonly records = new Recent<StoredRecord | null>(REMEMBERED_RECORDS);
  private readonly heads = new Recent<number>(REMEMBERED_STREAMS);
  /** The next feed position, once known. */
  nextPosition: number | undefined;

  /** The record, `null` when it is known not to exist, `undefined` when the writer does not know. */
  record(kind: string, id: string): StoredRecord | null | undefined {
    return this.records.get(`${kind}\u0000${id}`);
  }
  remember(kind: string, id: string, record: StoredRecord | null): void {
    this.records.set(`${kind}\u0000${id}`, record);
  }
  head(stream: string): number | undefined {
    return this.heads.get(stream);
  }
  rememberHead(stream: string, next: number): void {
    this.heads.set(stream, next);
  }
  forget(): void {
    this.records.clear();
    this.heads.clear();
    this.nextPosition = undefined;
  }
}
