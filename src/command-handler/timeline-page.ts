import type { StoreReader, TimelineEntry, TimelineKind, TimelineOptions } from '../store/store.js';

/** Entries read from the store's timeline per step while a page is filled past entries a check turns away. */
const STEP = 200;
/** At most this many entries are looked at for one page: a check that keeps almost nothing ends the page early. */
export const MAX_LOOKED_AT = 20_000;

/** One page of a timeline and whether entries follow it. */
export interface TimelinePage {
  entries: TimelineEntry[];
  /**
   * Where the next page starts (its `before`) while entries may follow: the page's last entry, or the last one
   * looked at when the page was cut short.
   */
  next?: { at: string; id: string };
}

const position = (e: TimelineEntry) => ({ at: e.at, id: e.id });

/**
 * One page of `limit` entries of a timeline, newest first, of those `options` and `keep` accept: the store's
 * filters narrow the index read; `keep` judges what they cannot say (a run's hold, an automation a reader may
 * not see). Reads a step at a time until the page is full, at most {@link MAX_LOOKED_AT} entries.
 *
 * @example
 * ```ts
 * const { entries, next } = await store.read((r) =>
 *   timelinePage(r, 'run', { states: ['failed'], limit: 25 }),
 * );
 * ```
 */
export async function timelinePage(
  reader: StoreReader,
  kind: TimelineKind,
  options: TimelineOptions,
  keep?: (entry: TimelineEntry) => boolean | Promise<boolean>,
): Promise<TimelinePage> {
  if (keep === undefined) {
    const read = await reader.timeline(kind, { ...options, limit: options.limit + 1 });
    const entries = read.slice(0, options.limit);
    return read.length > options.limit ? { entries, next: position(entries.at(-1)!) } : { entries };
  }
  const entries: TimelineEntry[] = [];
  let before = options.before;
  for (let looked = 0; looked < MAX_LOOKED_AT;) {
    const step = Math.max(STEP, options.limit + 1);
    const read = await reader.timeline(kind, { ...options, limit: step, ...(before === undefined ? {} : { before }) });
    for (const entry of read) {
      looked += 1;
      if (!(await keep(entry))) continue;
      if (entries.length === options.limit) return { entries, next: position(entries.at(-1)!) };
      entries.push(entry);
    }
    if (read.length < step) return { entries };
    before = position(read.at(-1)!);
  }
  return before === undefined ? { entries } : { entries, next: before };
}

/**
 * The records `ids` name, in their order, passing over any gone meanwhile (one read each: callers hand a page,
 * never a whole kind).
 *
 * @example
 * ```ts
 * const runs = await recordsNamed<RunRecord>(reader, 'run', page.entries.map((e) => e.id));
 * ```
 */
export async function recordsNamed<R>(reader: StoreReader, kind: TimelineKind, ids: Iterable<string>): Promise<R[]> {
  const records: R[] = [];
  for (const id of ids) {
    const record = await reader.get(kind, id);
    if (record !== undefined) records.push(record as R);
  }
  return records;
}
