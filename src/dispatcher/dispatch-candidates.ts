import { OccurrenceState } from '../../machines/index.js';
import { lookupAhead } from '../domain/read-ahead.js';
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
  const occurrenceOf = await lookupAhead<OccurrenceRecord['data']>(reader, KINDS.occurrence, ids);
  const occurrences: OccurrenceRecord[] = [];
  for (const id of ids) {
    const record = (await occurrenceOf(id)) as OccurrenceRecord | undefined;
    const state = record === undefined ? undefined : stateOf(record);
    if (state === OccurrenceState.claimed || state === OccurrenceState.dispatching) occurrences.push(record!);
  }
  const runIds = occurrences.flatMap((o) => o.data.attributes.activeRunRef ?? []);
  const holdOf = await lookupAhead<RunHoldRecord['data']>(reader, KINDS.runHold, runIds);
  const candidates = new Set<string>();
  for (const occurrence of occurrences) {
    const runId = occurrence.data.attributes.activeRunRef;
    const hold = runId === undefined ? undefined : await holdOf(runId);
    if (holdStateGiven(occurrence, hold) !== RunHoldState.held) candidates.add(occurrence.id);
  }
  return candidates;
}
