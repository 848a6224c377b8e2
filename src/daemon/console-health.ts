import { DefinitionState } from '../../machines/index.js';
import { QuarantineState } from '../../machines/extension-states.js';
import { consecutiveFailuresOf, staleReasonOf } from '../command-handler/execution-reads.js';
import { DEFINITION_KIND, type DefinitionRecord } from '../domain/definition-records.js';
import { readQuarantine } from '../domain/quarantine.js';
import { KINDS, OCCURRENCE_LIVE, stateOf, type OccurrenceRecord, type RunRecord } from '../domain/records.js';
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
  const { rrule, timezone } = record.data.attributes.definition.trigger.schedule;
  const nextDueAt =
    state === DefinitionState.active && !quarantined
      ? (svc.schedule(rrule, timezone).nextAfter(svc.clock.now())?.toISOString() ?? null)
      : null;
  return {
    nextDueAt,
    consecutiveFailures: consecutiveFailuresOf(runs),
    quarantined,
    staleReason: await staleReasonOf(reader, state, { quarantined, reason: quarantine.reason }, live),
  };
}

/**
 * The health and latest run of each automation of one page, from one pass over the runs and live occurrences
 * (where `definition.health.v1` and `run.history.v1` per row would each read them whole again): what the
 * definitions panel shows. Tombstoned definitions get neither, as their reads refuse them.
 */
export async function pageHealth(
  svc: EngineServices,
  reader: StoreReader,
  page: DefinitionFacts[],
): Promise<Array<DefinitionFacts & { health?: HealthSummary; lastRun?: Record<string, unknown> }>> {
  const facts = new Map(page.map((f) => [f.automationId, f]));
  const ids = new Set(page.filter((f) => f.lifecycleState !== DefinitionState.tombstoned).map((f) => f.automationId));
  const runs = new Map<string, RunRecord[]>();
  for (const run of (await reader.list<RunRecord['data']>(KINDS.run)) as RunRecord[]) {
    const id = run.data.attributes.automationId;
    if (ids.has(id)) runs.set(id, [...(runs.get(id) ?? []), run]);
  }
  const live = new Map<string, OccurrenceRecord[]>();
  for (const o of (await reader.list<OccurrenceRecord['data']>(KINDS.occurrence)) as OccurrenceRecord[]) {
    const id = o.data.attributes.automationId;
    if (ids.has(id) && OCCURRENCE_LIVE.has(stateOf(o))) live.set(id, [...(live.get(id) ?? []), o]);
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
