import { OccurrenceState } from '../../machines/index.js';
import { ContractError } from '../contract/errors.js';
import {
  KINDS,
  occurrenceContext,
  renderAttempt,
  renderOccurrence,
  renderRun,
  stateOf,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
} from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { missingEntity } from './operator-lookups.js';
import { attemptFailureView, runFailureFields } from './failure-view.js';
import { attemptReceipt } from './receipt-reads.js';
import { recordsNamed, timelinePage } from './timeline-page.js';

/** The operator's views of occurrences: the scheduler's queues by stage, or every occurrence the store holds. */
export const OCCURRENCE_VIEWS = ['due', 'eligible', 'claimed', 'running', 'recovery_required', 'all'] as const;
export type OccurrenceView = (typeof OCCURRENCE_VIEWS)[number];

/**
 * The states each staged view shows. `due` is `planned` with its slot reached (decided against the clock);
 * `claimed` includes `dispatching` (claimed, launch not confirmed), and `recovery_required` includes
 * `recovering` (an operator's determination is being carried out).
 */
const VIEW_STATES: Record<Exclude<OccurrenceView, 'all' | 'due'>, ReadonlySet<string>> = {
  eligible: new Set([OccurrenceState.eligible]),
  claimed: new Set([OccurrenceState.claimed, OccurrenceState.dispatching]),
  running: new Set([OccurrenceState.running]),
  recovery_required: new Set([OccurrenceState.recovering, OccurrenceState.recovery_required]),
};

const MAX_PAGE = 100;

interface Position {
  scheduledFor: string;
  occurrenceId: string;
}

function decodeCursor(cursor: string | undefined, view: OccurrenceView): Position | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof value.s === 'string' && typeof value.o === 'string' && value.v === view)
      return { scheduledFor: value.s, occurrenceId: value.o };
  } catch {
    // the typed error below
  }
  throw new ContractError('VALIDATION_FAILED', `cursor is not one this engine issued for view ${view}`, {
    field: 'payload.cursor',
  });
}

const encodeCursor = (p: Position, view: OccurrenceView): string =>
  Buffer.from(JSON.stringify({ v: view, s: p.scheduledFor, o: p.occurrenceId })).toString('base64url');

const positionOf = (o: OccurrenceRecord): Position => ({
  scheduledFor: o.data.attributes.scheduledFor,
  occurrenceId: o.id,
});

/** Newest slot first, then by id descending: the same order `run.history.v1` lists runs in. */
const newestFirst = (a: Position, b: Position): number =>
  a.scheduledFor === b.scheduledFor
    ? b.occurrenceId.localeCompare(a.occurrenceId)
    : b.scheduledFor.localeCompare(a.scheduledFor);

/** The live occurrences (the live index): a staged view shows only those, since its states never settle. */
async function liveOccurrences(reader: StoreReader): Promise<OccurrenceRecord[]> {
  const found: OccurrenceRecord[] = [];
  for (const { id } of await reader.liveWork(KINDS.occurrence)) {
    const record = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
    if (record !== undefined) found.push(record as OccurrenceRecord);
  }
  return found;
}

/** Planned with its slot reached and any retry backoff over: what the scheduler would make eligible now. */
export function isDue(o: OccurrenceRecord, now: Date): boolean {
  if (stateOf(o) !== OccurrenceState.planned) return false;
  const { scheduledFor, notBefore } = o.data.attributes;
  const at = now.getTime();
  return Date.parse(scheduledFor) <= at && (notBefore === undefined || Date.parse(notBefore) <= at);
}

function inView(o: OccurrenceRecord, view: OccurrenceView, now: Date): boolean {
  if (view === 'all') return true;
  if (view === 'due') return isDue(o, now);
  return VIEW_STATES[view].has(stateOf(o));
}

/**
 * occurrence.list.v1: the occurrences of one view (default `all`), of one automation when named, newest slot
 * first, a page of at most `limit` (default and maximum 100) after the cursor. Occurrences of `hidden`
 * automations (the read ACL's, for this caller) are left out before paging, so no cursor points at one.
 *
 * @example
 * ```ts
 * const page = await store.read((r) => listOccurrences(r, { view: 'recovery_required' }, clock.now()));
 * for (const o of page.occurrences as Array<{ occurrenceId: string }>) console.log(o.occurrenceId);
 * ```
 */
export async function listOccurrences(
  reader: StoreReader,
  payload: { view?: OccurrenceView; automationId?: string; limit?: number; cursor?: string },
  now: Date,
  hidden: ReadonlySet<string> = new Set(),
): Promise<Record<string, unknown>> {
  const view = payload.view ?? 'all';
  const limit = payload.limit ?? MAX_PAGE;
  const after = decodeCursor(payload.cursor, view);
  const shown =
    view === 'all'
      ? await everyOccurrence(reader, payload.automationId, limit, after, hidden)
      : stagedView(await liveOccurrences(reader), view, payload.automationId, limit, after, hidden, now);
  return {
    view,
    ...(payload.automationId === undefined ? {} : { automationId: payload.automationId }),
    asOf: now.toISOString(),
    occurrences: shown.page.map(renderOccurrence),
    cursor: {
      hasMore: shown.next !== undefined,
      ...(payload.cursor === undefined ? {} : { current: payload.cursor }),
      ...(shown.next === undefined ? {} : { next: encodeCursor(shown.next, view) }),
    },
  };
}

interface Shown {
  page: OccurrenceRecord[];
  /** Where the next page starts, while one may follow. */
  next?: Position;
}

/** `all`: a page of the store's timeline of occurrences, so a large store is never read whole. */
async function everyOccurrence(
  reader: StoreReader,
  automationId: string | undefined,
  limit: number,
  after: Position | undefined,
  hidden: ReadonlySet<string>,
): Promise<Shown> {
  const found = await timelinePage(
    reader,
    'occurrence',
    {
      ...(automationId === undefined ? {} : { automationIds: [automationId] }),
      ...(after === undefined ? {} : { before: { at: after.scheduledFor, id: after.occurrenceId } }),
      limit,
    },
    hidden.size === 0 ? undefined : (entry) => !hidden.has(entry.automationId),
  );
  const page = await recordsNamed<OccurrenceRecord>(
    reader,
    'occurrence',
    found.entries.map((e) => e.id),
  );
  return found.next === undefined
    ? { page }
    : { page, next: { scheduledFor: found.next.at, occurrenceId: found.next.id } };
}

/** A staged view: the live occurrences in its stage, sorted and paged here (live work is bounded). */
function stagedView(
  live: OccurrenceRecord[],
  view: OccurrenceView,
  automationId: string | undefined,
  limit: number,
  after: Position | undefined,
  hidden: ReadonlySet<string>,
  now: Date,
): Shown {
  const matching = live
    .filter((o) => !hidden.has(o.data.attributes.automationId))
    .filter((o) => automationId === undefined || o.data.attributes.automationId === automationId)
    .filter((o) => inView(o, view, now))
    .sort((a, b) => newestFirst(positionOf(a), positionOf(b)))
    .filter((o) => after === undefined || newestFirst(after, positionOf(o)) < 0);
  const page = matching.slice(0, limit);
  const last = page.at(-1);
  return matching.length > limit && last !== undefined ? { page, next: positionOf(last) } : { page };
}

/** The occurrence a read names, or NOT_FOUND (saying when retention compacted it). */
async function readOccurrence(reader: StoreReader, occurrenceId: string): Promise<OccurrenceRecord> {
  const record = await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, occurrenceId);
  if (record === undefined) throw await missingEntity(reader, 'occurrence', occurrenceId);
  return record as OccurrenceRecord;
}

/**
 * A run with each attempt the store holds, each attempt with its receipt's verification (null before it settles)
 * and, when it failed, its failure; the run with its latest failure and its hold for an operator retry.
 */
export async function runWithAttempts(reader: StoreReader, run: RunRecord): Promise<Record<string, unknown>> {
  const attempts = [];
  const records: AttemptRecord[] = [];
  for (const attemptId of run.data.attributes.attemptIds) {
    const attempt = await reader.get<AttemptRecord['data']>(KINDS.attempt, attemptId);
    if (attempt === undefined) continue;
    records.push(attempt as AttemptRecord);
    const receipt = await attemptReceipt(reader, attemptId);
    const failure = attemptFailureView(attempt as AttemptRecord);
    attempts.push({
      ...renderAttempt(attempt as AttemptRecord),
      ...(failure === undefined ? {} : { failure }),
      receipt:
        receipt === undefined
          ? null
          : {
              receiptId: receipt.receipt.receiptId,
              disposition: receipt.receipt.outcome.disposition,
              verified: receipt.verification.verified,
            },
    });
  }
  return { ...renderRun(run), ...(await runFailureFields(reader, run, records)), attempts };
}

/** The runs accepted under an occurrence's fence generations (one per generation at most), oldest first. */
export async function runsOf(reader: StoreReader, occurrence: OccurrenceRecord): Promise<RunRecord[]> {
  const ids = new Set<string>();
  for (let g = 1; g <= occurrenceContext(occurrence).fence.generation; g++) {
    const accepted = await reader.get<{ runId: string }>(KINDS.fenceRun, `${occurrence.id}#${g}`);
    if (accepted !== undefined) ids.add(accepted.data.runId);
  }
  const activeRun = occurrence.data.attributes.activeRunRef;
  if (activeRun !== undefined) ids.add(activeRun);
  const runs: RunRecord[] = [];
  for (const id of ids) {
    const run = await reader.get<RunRecord['data']>(KINDS.run, id);
    if (run !== undefined) runs.push(run as RunRecord);
  }
  return runs;
}

/** How many of the rendered runs' attempt receipts verify, do not, or are not written yet. */
function receiptSummary(runs: Array<Record<string, unknown>>): Record<string, number> {
  const summary = { verified: 0, unverified: 0, pending: 0 };
  for (const run of runs)
    for (const attempt of run.attempts as Array<{ receipt: { verified: boolean } | null }>) {
      if (attempt.receipt === null) summary.pending += 1;
      else if (attempt.receipt.verified) summary.verified += 1;
      else summary.unverified += 1;
    }
  return summary;
}

/**
 * occurrence.get.v1: one occurrence (state, slot, fence) with its runs, their attempts and each attempt's
 * receipt verification.
 */
export async function getOccurrenceDetail(
  reader: StoreReader,
  payload: { occurrenceId: string },
): Promise<Record<string, unknown>> {
  const occurrence = await readOccurrence(reader, payload.occurrenceId);
  const runs = [];
  for (const run of await runsOf(reader, occurrence)) runs.push(await runWithAttempts(reader, run));
  return { occurrence: renderOccurrence(occurrence), runs, receipts: receiptSummary(runs) };
}

/** run.get.v1: one run with its attempts and their receipt verification. */
export async function getRunDetail(reader: StoreReader, payload: { runId: string }): Promise<Record<string, unknown>> {
  const run = await reader.get<RunRecord['data']>(KINDS.run, payload.runId);
  if (run === undefined) throw await missingEntity(reader, 'run', payload.runId);
  const rendered = await runWithAttempts(reader, run as RunRecord);
  return { run: rendered, receipts: receiptSummary([rendered]) };
}
