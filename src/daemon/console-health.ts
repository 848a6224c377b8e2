import { DefinitionState } from '../../machines/index.js';
import { liveOccurrencesOf, recentRuns } from '../command-handler/automation-history.js';
import { QuarantineState } from '../../machines/extension-states.js';
import { consecutiveFailuresOf, staleReasonOf } from '../command-handler/execution-reads.js';
import { DEFINITION_KIND, type DefinitionRecord } from '../domain/definition-records.js';
import { readQuarantine } from '../domain/quarantine.js';
import { stateOf, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { StoreReader } from '../store/store.js';
import { consoleRun, type DefinitionFacts } from './console-reads.js';

/** What a definitions page shows of each automation's health: `definition.health.v1`'s figures the page uses. */
export interface HealthSummary {
  nextDueAt: string | null;
  consecutiveFailures: number;
  quarantined: boolean;
  staleReason: string | null;
}

const newestFirst = (a: RunRecord, b: RunRecord): number => {
  const x = a.data.attributes.startedAt;
  const y = b.data.attributes.startedAt;
  return x === y ? (a.id < b.id ? 1 : -1) : x < y ? 1 : -1;
};

async function healthOf(
  svc: EngineServices,
  reader: StoreReader,
  record: DefinitionRecord,
  runs: RunRecord[],
  live: OccurrenceRecord[],
): Promise<HealthSummary> {
  const state = stateOf(record);
  const quarantine = await readQuarantine(reader, record.id);
  const quarantined = quarantine.state === QuarantineState.quarantined;
  const nextDueAt =
    state === DefinitionState.active && !quarantined
      ? (svc.schedule(record.data.attributes.definition).nextAfter(svc.clock.now())?.toISOString() ?? null)
      : null;
  return {
    nextDueAt,
    consecutiveFailures: consecutiveFailuresOf(runs),
    quarantined,
    staleReason: await staleReasonOf(reader, state, { quarantined, reason: quarantine.reason }, live),
  };
}

/**
 * The health and latest run of each automation of one page (at most 100): its newest runs and its live
 * occurrences, each read from the store's indexes, never the kinds whole. What the definitions panel shows.
 * Tombstoned definitions get neither, as their reads refuse them.
 */
export async function pageHealth(
  svc: EngineServices,
  reader: StoreReader,
  page: DefinitionFacts[],
): Promise<Array<DefinitionFacts & { health?: HealthSummary; lastRun?: Record<string, unknown> }>> {
  const facts = new Map(page.map((f) => [f.automationId, f]));
  const ids = new Set(page.filter((f) => f.lifecycleState !== DefinitionState.tombstoned).map((f) => f.automationId));
  const runs = new Map<string, RunRecord[]>();
  const live = new Map<string, OccurrenceRecord[]>();
  for (const id of ids) {
    runs.set(id, await recentRuns(reader, id));
    live.set(id, await liveOccurrencesOf(reader, id));
  }
  const rows = [];
  for (const f of page) {
    const record = (await reader.get(DEFINITION_KIND, f.automationId)) as DefinitionRecord | undefined;
    if (!ids.has(f.automationId) || record === undefined) {
      rows.push(f);
      continue;
    }
    const own = (runs.get(f.automationId) ?? []).sort(newestFirst);
    const health = await healthOf(svc, reader, record, own, live.get(f.automationId) ?? []);
    const latest = own[0];
    rows.push({ ...f, health, ...(latest === undefined ? {} : { lastRun: await consoleRun(reader, latest, facts) }) });
  }
  return rows;
}
