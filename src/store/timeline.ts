import { valueAt } from './live-work.js';
import type { StoredRecord, TimelineEntry, TimelineFilter, TimelineKind, TimelineOptions } from './store.js';

/**
 * Where a timeline entry's fields sit in an occurrence's or a run's record, as JSON paths the SQL stores index
 * and the memory stores read: the instant is the occurrence's slot and the run's start.
 */
export const TIMELINE_PATHS = {
  occurrence: { at: ['attributes', 'scheduledFor'], automationId: ['attributes', 'automationId'] },
  run: { at: ['attributes', 'startedAt'], automationId: ['attributes', 'automationId'] },
} as const satisfies Record<TimelineKind, Record<'at' | 'automationId', readonly string[]>>;

/** The machine state of any entity record. */
export const STATE_PATH = ['snapshot', 'value'] as const;

export const TIMELINE_KINDS: ReadonlySet<string> = new Set<TimelineKind>(['occurrence', 'run']);

/** A record's timeline entry, or undefined for a record of another kind or without the fields. */
export function timelineEntryOf(record: StoredRecord): TimelineEntry | undefined {
  if (!TIMELINE_KINDS.has(record.kind)) return undefined;
  const paths = TIMELINE_PATHS[record.kind as TimelineKind];
  const instant = valueAt(record.data, paths.at);
  const automationId = valueAt(record.data, paths.automationId);
  const state = valueAt(record.data, STATE_PATH);
  if (typeof instant !== 'string' || typeof automationId !== 'string' || typeof state !== 'string') return undefined;
  return { id: record.id, at: instant, state, automationId };
}

/** Oldest first (the order the memory index keeps); reverse for a timeline's newest first. */
export function oldestFirst(a: { at: string; id: string }, b: { at: string; id: string }): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Whether a filter (and a page's `before`, when given) keeps an entry. */
export function keeps(entry: TimelineEntry, filter: TimelineFilter & { before?: { at: string; id: string } }): boolean {
  if (filter.automationIds !== undefined && !filter.automationIds.includes(entry.automationId)) return false;
  if (filter.states !== undefined && !filter.states.includes(entry.state)) return false;
  if (filter.from !== undefined && entry.at < filter.from) return false;
  if (filter.to !== undefined && entry.at >= filter.to) return false;
  return filter.before === undefined || oldestFirst(entry, filter.before) < 0;
}

/** Adds one entry's state to a count. */
export function countInto(counts: Record<string, number>, state: string, by = 1): void {
  const next = (counts[state] ?? 0) + by;
  if (next === 0) delete counts[state];
  else counts[state] = next;
}

/**
 * The memory and JSON stores' timelines: each kind's entries in a sorted array, built on the first read of the
 * kind (a JSON store's sealed records are on disk until then) and kept up to date with every commit after.
 */
export class TimelineIndex {
  private readonly sorted = new Map<string, TimelineEntry[]>();
  private readonly byId = new Map<string, Map<string, TimelineEntry>>();

  isBuilt(kind: string): boolean {
    return this.sorted.has(kind);
  }
  has(kind: string, id: string): boolean {
    return this.byId.get(kind)?.has(id) ?? false;
  }

  /** Builds a kind's index from its records (once; later reads use it). */
  build(kind: string, records: Iterable<StoredRecord>): void {
    const entries: TimelineEntry[] = [];
    for (const record of records) {
      const entry = timelineEntryOf(record);
      if (entry !== undefined) entries.push(entry);
    }
    entries.sort(oldestFirst);
    this.sorted.set(kind, entries);
    this.byId.set(kind, new Map(entries.map((e) => [e.id, e])));
  }

  /** Records `record` as the current version of its id (undefined: gone); a no-op until the kind is built. */
  update(kind: string, id: string, record: StoredRecord | undefined): void {
    const entries = this.sorted.get(kind);
    const ids = this.byId.get(kind);
    if (entries === undefined || ids === undefined) return;
    const previous = ids.get(id);
    const next = record === undefined ? undefined : timelineEntryOf(record);
    if (previous !== undefined && next !== undefined && previous.at === next.at) {
      // A transition keeps the instant: the entry changes in place, the order stays.
      entries[lowerBound(entries, previous)] = next;
      ids.set(id, next);
      return;
    }
    if (previous !== undefined) {
      entries.splice(lowerBound(entries, previous), 1);
      ids.delete(id);
    }
    if (next === undefined) return;
    entries.splice(lowerBound(entries, next), 0, next);
    ids.set(id, next);
  }

  entry(kind: string, id: string): TimelineEntry | undefined {
    return this.byId.get(kind)?.get(id);
  }

  /** One page, newest first; the kind must be built. */
  page(kind: string, options: TimelineOptions): TimelineEntry[] {
    const entries = this.sorted.get(kind) ?? [];
    let end = entries.length;
    if (options.before !== undefined) end = lowerBound(entries, options.before);
    if (options.to !== undefined) end = Math.min(end, lowerBound(entries, { at: options.to, id: '' }));
    const out: TimelineEntry[] = [];
    for (let i = end - 1; i >= 0; i--) {
      const entry = entries[i]!;
      if (options.from !== undefined && entry.at < options.from) break;
      if (!keeps(entry, options)) continue;
      out.push(entry);
      if (out.length >= options.limit) break;
    }
    return out;
  }

  counts(kind: string, filter: TimelineFilter): Record<string, number> {
    const counts: Record<string, number> = {};
    const entries = this.sorted.get(kind) ?? [];
    const start = filter.from === undefined ? 0 : lowerBound(entries, { at: filter.from, id: '' });
    for (let i = start; i < entries.length; i++) {
      const entry = entries[i]!;
      if (filter.to !== undefined && entry.at >= filter.to) break;
      if (keeps(entry, filter)) countInto(counts, entry.state);
    }
    return counts;
  }
}

/** The first index whose entry is not older than `position`. */
function lowerBound(entries: readonly TimelineEntry[], position: { at: string; id: string }): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (oldestFirst(entries[mid]!, position) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A page of a layer above stored state (a transaction's writes): the layer below's page, with entries this
 * layer rewrote or removed taken out and its own entries put in. The layer below is asked for as many more
 * entries as this layer wrote, so the page is whole after the ones it rewrote are taken out.
 */
export function overlaidPage(
  below: (options: TimelineOptions) => TimelineEntry[],
  own: ReadonlyMap<string, StoredRecord | null>,
  options: TimelineOptions,
): TimelineEntry[] {
  const merged = new Map(below({ ...options, limit: options.limit + own.size }).map((e) => [e.id, e]));
  for (const [id, record] of own) {
    merged.delete(id);
    const entry = record === null ? undefined : timelineEntryOf(record);
    if (entry !== undefined && keeps(entry, options)) merged.set(id, entry);
  }
  return [...merged.values()].sort((a, b) => oldestFirst(b, a)).slice(0, options.limit);
}

/**
 * The counts of a layer above stored state: the layer below's, less what its entries the layer rewrote or
 * removed counted, plus the layer's own entries the filter keeps.
 */
export function overlaidCounts(
  below: Record<string, number>,
  belowEntry: (id: string) => TimelineEntry | undefined,
  own: ReadonlyMap<string, StoredRecord | null>,
  filter: TimelineFilter,
): Record<string, number> {
  const counts = { ...below };
  for (const [id, record] of own) {
    const previous = belowEntry(id);
    if (previous !== undefined && keeps(previous, filter)) countInto(counts, previous.state, -1);
    const entry = record === null ? undefined : timelineEntryOf(record);
    if (entry !== undefined && keeps(entry, filter)) countInto(counts, entry.state);
  }
  return counts;
}
