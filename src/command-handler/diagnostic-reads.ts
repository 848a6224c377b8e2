import type { Clock } from '../clock/clock.js';
import type { Store } from '../store/store.js';
import type { DiagnosticCommand } from './envelope.js';
import { occurrenceHistory } from './occurrence-history.js';
import { getOccurrenceDetail, getRunDetail, listOccurrences } from './occurrence-reads.js';
import { getReceipt } from './receipt-reads.js';
import { schedulerStatus } from './scheduler-status.js';

/**
 * What a diagnostic read needs: the store it reads in one snapshot, the clock that says what is due, and the
 * automations the read ACL hides from this caller (left out of lists; reads of one were refused before).
 */
export interface DiagnosticDeps {
  store: Store;
  clock: Clock;
  hidden: ReadonlySet<string>;
}

export type DiagnosticRead = (
  deps: DiagnosticDeps,
  payload: Record<string, unknown>,
) => Promise<Record<string, unknown>>;

/**
 * The read-only diagnostics by command name. Each reads one store snapshot; the envelope schema has already
 * checked its payload (closed objects), so the casts below only name the shape.
 */
export const DIAGNOSTIC_READS: Readonly<Record<DiagnosticCommand, DiagnosticRead>> = {
  'occurrence.list.v1': ({ store, clock, hidden }, p) =>
    store.read((r) => listOccurrences(r, p as never, clock.now(), hidden)),
  'occurrence.get.v1': ({ store }, p) => store.read((r) => getOccurrenceDetail(r, p as never)),
  'occurrence.history.v1': ({ store }, p) => store.read((r) => occurrenceHistory(r, p as never)),
  'run.get.v1': ({ store }, p) => store.read((r) => getRunDetail(r, p as never)),
  'receipt.get.v1': ({ store }, p) => store.read((r) => getReceipt(r, p as never)),
  'scheduler.status.v1': ({ store, clock, hidden }) => store.read((r) => schedulerStatus(r, clock.now(), hidden)),
};
