import type { StoreTransaction } from '../store/store.js';
import { KINDS, type AttemptRecord, type OccurrenceRecord, type RunRecord } from './records.js';

/** Reads an execution entity that must exist (a missing one is a broken store, not a user error). */
export async function loadOccurrence(tx: StoreTransaction, id: string): Promise<OccurrenceRecord> {
  const r = await tx.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
  if (r === undefined) throw new Error(`occurrence ${id} is missing`);
  return r as OccurrenceRecord;
}
export async function loadRun(tx: StoreTransaction, id: string): Promise<RunRecord> {
  const r = await tx.get<RunRecord['data']>(KINDS.run, id);
  if (r === undefined) throw new Error(`run ${id} is missing`);
  return r as RunRecord;
}
export async function loadAttempt(tx: StoreTransaction, id: string): Promise<AttemptRecord> {
  const r = await tx.get<AttemptRecord['data']>(KINDS.attempt, id);
  if (r === undefined) throw new Error(`attempt ${id} is missing`);
  return r as AttemptRecord;
}
