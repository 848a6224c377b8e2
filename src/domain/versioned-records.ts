import { forEachPage, type StoredRecord, type StoreReader } from '../store/store.js';
import { readAhead } from './read-ahead.js';

/** Records read per page when most of them changed (a fresh engine): bounds what one read holds at once. */
export const REREAD_PAGE = 500;

/**
 * Records of one kind as some part of the engine needs them (a projection), remembered between passes and
 * checked against the store's record versions each time: a pass lists ids and versions and reads again
 * only the records whose version moved (whole pages when more than {@link REREAD_PAGE} did, e.g. a
 * fresh engine), so an idle pass (and the wake-up computation after it) does not read and parse every
 * definition and plan cursor again.
 *
 * @example
 * ```ts
 * const cursors = new VersionedRecords<PlanCursor, { lastSlot: string }>('plan-cursor', (r) => ({
 *   id: r.id,
 *   version: r.version,
 *   lastSlot: r.data.lastSlot,
 * }));
 * await cursors.current(reader); // id order, current as of `reader`
 * ```
 */
export class VersionedRecords<T extends { readonly id: string; readonly version: number }, D = unknown> {
  private readonly known = new Map<string, T>();

  constructor(
    readonly kind: string,
    private readonly project: (record: StoredRecord<D>) => T,
  ) {}

  /**
   * A version of a record this process has just committed (after the commit, never inside the
   * transaction): the next pass finds it current instead of reading it again. Planning moves every due
   * definition's cursor, and re-reading them would cost a burst a page scan on the next pass.
   */
  learn(record: StoredRecord<D>): void {
    if ((this.known.get(record.id)?.version ?? -1) < record.version) this.known.set(record.id, this.project(record));
  }

  /**
   * The projection last read or learned of a record, current or not: callers check its version against a
   * transaction's.
   */
  remembered(id: string): T | undefined {
    return this.known.get(id);
  }

  /** The ids of the records known (as of the last {@link current}, plus those learned since). */
  knownIds(): string[] {
    return [...this.known.keys()];
  }

  /**
   * Every record of the kind, in id order, current as of `reader`: unchanged ones from memory, the others read
   * again.
   */
  async current(reader: StoreReader): Promise<T[]> {
    const versions = await reader.versions(this.kind);
    const stale = versions.filter((v) => this.known.get(v.id)?.version !== v.version);
    // One statement per page of moved records where the store reads many at once (another engine moved them).
    const ahead = await readAhead<D>(
      reader,
      this.kind,
      stale.map((v) => v.id),
      REREAD_PAGE,
    );
    if (ahead !== undefined) {
      for (const record of ahead.values()) this.known.set(record.id, this.project(record));
    } else if (stale.length > REREAD_PAGE) {
      // Mostly unknown or moved: pages of whole records cost less than one read per record.
      await forEachPage<D>(reader, this.kind, REREAD_PAGE, (page) => {
        for (const record of page) this.known.set(record.id, this.project(record));
      });
    } else {
      for (const { id } of stale) {
        const record = await reader.get<D>(this.kind, id);
        if (record !== undefined) this.known.set(id, this.project(record));
      }
    }
    if (this.known.size > versions.length) {
      const present = new Set(versions.map((v) => v.id));
      for (const id of this.known.keys()) if (!present.has(id)) this.known.delete(id);
    }
    return versions.flatMap((v) => this.known.get(v.id) ?? []);
  }
}
