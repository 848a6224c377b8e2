import { OccurrenceState } from '../../machines/index.js';
import { readAhead } from '../domain/read-ahead.js';
import { KINDS, stateOf, type OccurrenceRecord } from '../domain/records.js';
import { RunHoldState } from '../../machines/extension-states.js';
import { holdStateGiven, type RunHoldRecord } from '../domain/run-hold.js';
import type { StoreReader } from '../store/store.js';

/**
 * The ids among `ids` a pass tries to dispatch: occurrences still claimed or dispatching whose active run is not
 * held. Read at once where the store reads many records in one statement, else one by one in this read. A filter
 * only: each is decided again in its own transaction (acceptAndDispatch), which may still find nothing to do.
 */
export async function dispatchCandidates(reader: StoreReader, ids: readonly string[]): Promise<Set<string>> {
  const ahead = await readAhead<OccurrenceRecord['data']>(reader, KINDS.occurrence, ids);
  const occurrences: OccurrenceRecord[] = [];
  for (const id of ids) {
    const record =
      ahead === undefined ? await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id) : ahead.get(id);
    if (record === undefined) continue;
    const state = stateOf(record as OccurrenceRecord);
    if (state === OccurrenceState.claimed || state === OccurrenceState.dispatching)
      occurrences.push(record as OccurrenceRecord);
  }
  const runIds = occurrences.flatMap((o) => o.data.attributes.activeRunRef ?? []);
  const holds = await readAhead<RunHoldRecord['data']>(reader, KINDS.runHold, runIds);
  const candidates = new Set<string>();
  for (const occurrence of occurrences) {
    const runId = occurrence.data.attributes.activeRunRef;
    const hold =
      runId === undefined
        ? undefined
        : holds === undefined
          ? await reader.get<RunHoldRecord['data']>(KINDS.runHold, runId)
          : holds.get(runId);
    if (holdStateGiven(occurrence, hold) !== RunHoldState.held) candidates.add(occurrence.id);
  }
  return candidates;
}
