import { OccurrenceState } from '../../machines/index.js';
import { OWNER_LEASE_KIND, type OwnerLease } from '../domain/owner-lease.js';
import { currentGeneration } from '../domain/scheduler-generation.js';
import { KINDS, stateOf, type OccurrenceRecord } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { isDue } from './occurrence-reads.js';

/** The oldest of some instants, or null when there is none. */
const oldest = (values: string[]): string | null => values.sort().at(0) ?? null;

/** Live occurrences counted by state, with the due backlog (see {@link isDue}) and the oldest waits. */
async function liveOccurrences(
  reader: StoreReader,
  now: Date,
  hidden: ReadonlySet<string>,
): Promise<Record<string, unknown>> {
  const byState: Record<string, number> = {};
  const due: string[] = [];
  const eligible: string[] = [];
  for (const { id } of await reader.liveWork(KINDS.occurrence)) {
    const record = (await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id)) as OccurrenceRecord | undefined;
    if (record === undefined || hidden.has(record.data.attributes.automationId)) continue;
    const state = stateOf(record);
    byState[state] = (byState[state] ?? 0) + 1;
    const a = record.data.attributes;
    if (isDue(record, now)) due.push(a.scheduledFor);
    if (state === OccurrenceState.eligible) eligible.push(a.eligibleAt ?? a.scheduledFor);
  }
  return {
    live: Object.values(byState).reduce((sum, n) => sum + n, 0),
    byState,
    due: due.length,
    oldestDueAt: oldest(due),
    oldestEligibleAt: oldest(eligible),
  };
}

/**
 * scheduler.status.v1: what the store says of the scheduler now — the engine instances' owner leases (the
 * leader is the unexpired one renewed last; an engine writes its lease with its generation on its first pass and
 * renews it only while live work exists, so an idle store's lapses), the store's current scheduler generation
 * (`currentGeneration`, null before any pass), the live occurrences by state with the due backlog, and each
 * automation's planning cursor.
 * What concerns `hidden` automations (the read ACL's, for this caller) is left out of the counts and cursors.
 *
 * @example
 * ```ts
 * const status = await store.read((r) => schedulerStatus(r, clock.now()));
 * if (status.leader === null) console.log('no engine holds live work');
 * ```
 */
export async function schedulerStatus(
  reader: StoreReader,
  now: Date,
  hidden: ReadonlySet<string> = new Set(),
): Promise<Record<string, unknown>> {
  const owners = (await reader.list<OwnerLease>(OWNER_LEASE_KIND)).map((r) => ({
    ...r.data,
    live: Date.parse(r.data.expiresAt) > now.getTime(),
  }));
  const leader =
    owners
      .filter((o) => o.live)
      .sort((a, b) => a.renewedAt.localeCompare(b.renewedAt))
      .at(-1) ?? null;
  const planning = (await reader.list<{ lastSlot: string }>(KINDS.planCursor))
    .filter((r) => !hidden.has(r.id))
    .map((r) => ({ automationId: r.id, lastPlannedSlot: r.data.lastSlot }));
  return {
    asOf: now.toISOString(),
    leader,
    owners,
    currentGeneration: await currentGeneration(reader),
    occurrences: await liveOccurrences(reader, now, hidden),
    planning,
  };
}
