import { LIVE_KINDS, LIVE_WORK_PATHS, valueAt, type LiveWorkField } from './live-work.js';
import { timelineEntryOf } from './timeline.js';
import type { StoredRecord } from './store.js';

/**
 * The fields of an entity record that the SQL stores keep in columns of their own beside its data, taken from the
 * record in the process that writes it: what the passes select on (a kind's and an automation's live work, the
 * claimable occurrences in due order, the one live occurrence per automation) and what the operator's timelines
 * page through. An index on a column costs the database nothing to compute; one on an expression over the JSON
 * text parses that text again for every index on every write, and every read of live work parsed it once per row.
 * Values are the record's strings (any other JSON value is null), the revision its number as text; a record of
 * another kind has none. The memory stores read the same fields from the records themselves.
 */
export const RECORD_COLUMNS = [
  'state',
  'automation_id',
  'scheduled_for',
  'not_before',
  'lease_expires_at',
  'deadline_at',
  'automation_revision',
  'claimed_by',
  'launched_by',
  'timeline_at',
  'timeline_automation_id',
] as const;

export type RecordColumn = (typeof RECORD_COLUMNS)[number];

/** The column that holds each {@link LiveWork} field (state is every entity's; the rest only live kinds'). */
export const LIVE_WORK_COLUMNS = {
  state: 'state',
  automationId: 'automation_id',
  scheduledFor: 'scheduled_for',
  notBefore: 'not_before',
  leaseExpiresAt: 'lease_expires_at',
  deadlineAt: 'deadline_at',
  automationRevision: 'automation_revision',
  claimedBy: 'claimed_by',
  launchedBy: 'launched_by',
} as const satisfies Record<LiveWorkField, RecordColumn>;

/** The live-work fields beside the state, each with its column. */
const LIVE_FIELDS = (Object.entries(LIVE_WORK_COLUMNS) as Array<[LiveWorkField, RecordColumn]>).filter(
  ([field]) => field !== 'state',
);

/** The kinds whose records have columns: the entities with a machine state. */
const ENTITY_KINDS: ReadonlySet<string> = new Set(['occurrence', 'run', 'attempt']);

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function revisionText(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return text(value);
}

/** A record's column values, in {@link RECORD_COLUMNS} order (all null for a kind without columns). */
export function recordColumns(record: StoredRecord): Array<string | null> {
  const values: Partial<Record<RecordColumn, string | null>> = {};
  if (ENTITY_KINDS.has(record.kind)) {
    values.state = text(valueAt(record.data, LIVE_WORK_PATHS.state));
    if (LIVE_KINDS.has(record.kind))
      for (const [field, column] of LIVE_FIELDS) {
        const value = valueAt(record.data, LIVE_WORK_PATHS[field]);
        values[column] = field === 'automationRevision' ? revisionText(value) : text(value);
      }
    const entry = timelineEntryOf(record);
    values.timeline_at = entry?.at ?? null;
    values.timeline_automation_id = entry?.automationId ?? null;
  }
  return RECORD_COLUMNS.map((column) => values[column] ?? null);
}
