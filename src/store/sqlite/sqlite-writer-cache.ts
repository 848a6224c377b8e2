import type { StoredRecord } from '../store.js';

/**
 * Records (or their absence) the writer remembers: what one item's steps read again within moments (a
 * daemon's run-now, a claim's accept). A burst of 1000 outgrows any bound worth holding, and every record
 * kept there survived young-generation collections only to be dropped later, so a small bound plans a
 * burst faster and in less memory than a large one (bench/README.md, Store design notes).
 */
export const REMEMBERED_RECORDS = 256;
/** Streams whose next sequence the writer remembers; beyond either bound the least recently used is read again. */
export const REMEMBERED_STREAMS = 4_096;

/**
 * Keeps the `limit` most recently used entries of a two-part key, and at most twice as many: two
 * generations, the older dropped whole when the newer fills. Evicting one oldest entry per insert from a
 * single Map made V8 skip ever more deleted slots to find it (≈ 1 µs per write in a burst, where every
 * write misses). Keyed by kind, then id: ids are strings the engine already holds (their hash is
 * cached), where a joined key was a new string to flatten and hash on every lookup.
 */
class Recent<V> {
  private current = new Map<string, Map<string, V>>();
  private previous = new Map<string, Map<string, V>>();
  private size = 0;
  constructor(private readonly limit: number) {}

  get(kind: string, id: string): V | undefined {
    const recent = this.current.get(kind)?.get(id);
    if (recent !== undefined) return recent;
    const olderIds = this.previous.get(kind);
    const older = olderIds?.get(id);
    if (older !== undefined) {
      olderIds!.delete(id);
      this.keep(kind, id, older);
    }
    return older;
  }
  set(kind: string, id: string, value: V): void {
    this.previous.get(kind)?.delete(id);
    this.keep(kind, id, value);
  }
  clear(): void {
    this.current.clear();
    this.previous.clear();
    this.size = 0;
  }
  private keep(kind: string, id: string, value: V): void {
    let ids = this.current.get(kind);
    if (ids === undefined) this.current.set(kind, (ids = new Map()));
    const before = ids.size;
    ids.set(id, value);
    this.size += ids.size - before;
    if (this.size >= this.limit) {
      this.previous = this.current;
      this.current = new Map();
      this.size = 0;
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
    return this.records.get(kind, id);
  }
  remember(kind: string, id: string, record: StoredRecord | null): void {
    this.records.set(kind, id, record);
  }
  // Streams have one namespace: the kind part of their key is empty.
  head(stream: string): number | undefined {
    return this.heads.get('', stream);
  }
  rememberHead(stream: string, next: number): void {
    this.heads.set('', stream, next);
  }
  forget(): void {
    this.records.clear();
    this.heads.clear();
    this.nextPosition = undefined;
  }
}
