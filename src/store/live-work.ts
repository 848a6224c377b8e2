import type { LiveKind, LiveWork, LiveWorkOptions, StoredRecord } from './store.js';

/** The kinds whose live records are indexed, as {@link LiveKind} names them. */
export const LIVE_KINDS: ReadonlySet<string> = new Set<LiveKind>(['occurrence', 'attempt']);

/**
 * Where each {@link LiveWork} field sits in an entity record (`{ snapshot: { value, context }, attributes }`),
 * as JSON paths the SQL stores index and the memory stores read.
 */
export const LIVE_WORK_PATHS = {
  state: ['snapshot', 'value'],
  automationId: ['snapshot', 'context', 'automationId'],
  scheduledFor: ['attributes', 'scheduledFor'],
  notBefore: ['attributes', 'notBefore'],
  leaseExpiresAt: ['snapshot', 'context', 'fence', 'leaseExpiresAt'],
  deadlineAt: ['snapshot', 'context', 'deadlineAt'],
  automationRevision: ['attributes', 'automationRevision'],
  claimedBy: ['snapshot', 'context', 'fence', 'claimedBy'],
  launchedBy: ['attributes', 'workerCorrelation', 'workerId'],
} as const satisfies Record<Exclude<keyof LiveWork, 'id'>, readonly string[]>;

export type LiveWorkField = keyof typeof LIVE_WORK_PATHS;

/** The value at a JSON path of a record's data (null where the path ends early). */
export function valueAt(data: unknown, path: readonly string[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A record's live-work summary, or undefined when it is not live work (terminal, or of another kind). */
export function liveWorkOfRecord(record: StoredRecord): LiveWork | undefined {
  if (record.terminal || !LIVE_KINDS.has(record.kind)) return undefined;
  return liveWorkRow(record.id, (field) => valueAt(record.data, LIVE_WORK_PATHS[field]));
}

/** A summary from a row of the SQL stores' live-work query (any non-string field is null). */
export function liveWorkRow(id: string, field: (name: LiveWorkField) => unknown): LiveWork {
  const text = (name: LiveWorkField) => {
    const value = field(name);
    return typeof value === 'string' ? value : null;
  };
  // PostgreSQL's ->> gives every field as text; SQLite's json_extract and the records give the number.
  const raw = field('automationRevision');
  const revision = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : null;
  return {
    id,
    state: text('state') ?? '',
    automationId: text('automationId'),
    scheduledFor: text('scheduledFor'),
    notBefore: text('notBefore'),
    leaseExpiresAt: text('leaseExpiresAt'),
    deadlineAt: text('deadlineAt'),
    automationRevision: revision === null || Number.isNaN(revision) ? null : revision,
    claimedBy: text('claimedBy'),
    launchedBy: text('launchedBy'),
  };
}

/** The field naming the engine that holds live work of `kind`: an occurrence's claimer, an attempt's launcher. */
export const holderField = (kind: string): 'claimedBy' | 'launchedBy' =>
  kind === 'attempt' ? 'launchedBy' : 'claimedBy';

/** `work` without what {@link LiveWorkOptions.exceptHeldBy} leaves out. */
export function exceptHeld(kind: string, work: LiveWork[], options: LiveWorkOptions): LiveWork[] {
  const others = options.exceptHeldBy;
  if (others === undefined || others.length === 0) return work;
  const holder = holderField(kind);
  return work.filter((w) => !others.includes(w[holder] ?? ''));
}

export const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The memory and JSON stores' index of live work: each kind's live records, and each automation's, kept up
 * to date as records are committed or loaded, so {@link StoreReader.liveWork} costs the answer's size.
 */
export class LiveWorkIndex {
  private readonly byKind = new Map<string, Map<string, LiveWork>>();
  private readonly byAutomation = new Map<string, Map<string, LiveWork>>();

  /** Records `record` as the current version of its id (undefined: the record is gone). */
  update(kind: string, id: string, record: StoredRecord | undefined): void {
    if (!LIVE_KINDS.has(kind)) return;
    const previous = this.byKind.get(kind)?.get(id);
    if (previous !== undefined) {
      this.byKind.get(kind)!.delete(id);
      if (previous.automationId !== null) this.group(kind, previous.automationId).delete(id);
    }
    const work = record === undefined ? undefined : liveWorkOfRecord(record);
    if (work === undefined) return;
    let ofKind = this.byKind.get(kind);
    if (ofKind === undefined) this.byKind.set(kind, (ofKind = new Map()));
    ofKind.set(id, work);
    if (work.automationId !== null) this.group(kind, work.automationId).set(id, work);
  }

  list(kind: string, automationId?: string): LiveWork[] {
    const source = automationId === undefined ? this.byKind.get(kind) : this.group(kind, automationId, false);
    return [...(source?.values() ?? [])].sort(byId);
  }

  private group(kind: string, automationId: string, create = true): Map<string, LiveWork> {
    const key = `${kind}\u0000${automationId}`;
    let group = this.byAutomation.get(key);
    if (group === undefined) {
      group = new Map();
      if (!create) return group;
      this.byAutomation.set(key, group);
    }
    return group;
  }
}

/** The retired index records that held live work before the stores indexed it: migrations remove them. */
export const RETIRED_INDEX_KINDS = ['live-occurrence', 'live-attempt', 'live-occurrence-by-automation'] as const;

/** The SQL of the live-work fields, each as a column named after its field, for `json_extract`-style access. */
export function liveWorkColumns(extract: (path: readonly string[]) => string): string {
  return Object.entries(LIVE_WORK_PATHS)
    .map(([field, path]) => `${extract(path)} AS "${field}"`)
    .join(', ');
}

/** SQLite's expression for a field: the same text in the index and the query, so the index serves it. */
export const sqliteField = (path: readonly string[]) => `json_extract(data, '$.${path.join('.')}')`;
/** PostgreSQL's expression for a field (text, or null). */
export const postgresField = (path: readonly string[]) =>
  `(data${path
    .slice(0, -1)
    .map((key) => `->'${key}'`)
    .join('')}->>'${path.at(-1)!}')`;
