import type { StoredRecord } from './store.js';

/** Records (or their absence) the writer remembers: a burst's working set, ≈ 64 items × their 6–10 records. */
export const REMEMBERED_RECORDS = 2_048;
/** Streams whose next sequence the writer remembers; beyond either bound the least recently used is read again. */
export const REMEMBERED_STREAMS = 4_096;

/**
 * A map that keeps the `limit` most recently used entries, and at most twice as many: two generations, the
 * older dropped whole when the newer fills. Evicting one oldest entry per insert from a single Map made V8
 * skip ever more deleted slots to find it (≈ 1 µs per write in a burst, where every write misses).
 */
class Recent<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    const value = this.current.get(key);
    if (value !== undefined) return value;
    const older = this.previous.get(key);
    if (older !== undefined) {
      this.previous.delete(key);
      this.keep(key, older);
    }
    return older;
  }
  set(key: string, value: V): void {
    this.previous.delete(key);
    this.keep(key, value);
  }
  clear(): void {
    this.current.clear();
    this.previous.clear();
  }
  private keep(key: string, value: V): void {
    this.current.set(key, value);
    if (this.current.size >= this.limit) {
      this.previous = this.current;
      this.current = new Map();
    }
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
