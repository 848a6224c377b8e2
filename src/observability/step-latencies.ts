import type { EventEnvelope } from '../changefeed/event-envelope.js';
import { readEventFeed } from '../changefeed/stored-event.js';
import { KINDS, type OccurrenceRecord } from '../domain/records.js';
import type { Store, StoreReader } from '../store/store.js';

/** The occurrence steps whose latency from due time upstream's SLO gates measure, by the state each enters. */
export const STEP_OF_STATE = {
  planned: 'plan',
  claimed: 'claim',
  dispatching: 'dispatch',
  running: 'start',
} as const;
export type Step = (typeof STEP_OF_STATE)[keyof typeof STEP_OF_STATE];

const PAGE = 1000;
/** Due times remembered for occurrences still moving through their steps; the oldest are forgotten first. */
const REMEMBERED = 4096;

/**
 * Follows the committed changefeed and reports, for each occurrence's first fence, how long after its due time
 * (`scheduledFor`) it was planned, claimed, dispatched and started (`recordedAt` of the transition that entered
 * the step's state). Both instants are the engine clock's, so a simulated clock gives exact, repeatable values.
 * Only events recorded at or after `since` count: history from before the process started says nothing of it.
 */
export class StepLatencies {
  private after = -1;
  private readonly dueAt = new Map<string, number>();
  private scanning: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly since: number,
    private readonly observe: (step: Step, seconds: number) => void,
    /** Every event the scan reads (from `since` on), after its latency is measured. */
    private readonly onEvent: (event: EventEnvelope, reader: StoreReader) => Promise<void> | void = () => undefined,
  ) {}

  /** Reads what was committed since the last scan; concurrent callers share one scan. */
  scan(): Promise<void> {
    this.scanning ??= this.store.read((reader) => this.readNew(reader)).finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async readNew(reader: StoreReader): Promise<void> {
    for (;;) {
      const page = await readEventFeed(reader, { after: this.after, limit: PAGE });
      for (const entry of page) {
        this.after = entry.position;
        const recordedAt = Date.parse(entry.data.recordedAt);
        if (recordedAt < this.since) continue;
        await this.measure(reader, entry.data, recordedAt);
        await this.onEvent(entry.data, reader);
      }
      if (page.length < PAGE) return;
    }
  }

  private async measure(reader: StoreReader, event: EventEnvelope, recordedAt: number): Promise<void> {
    if (event.kind !== 'occurrence.transitioned' || event.occurrenceId === undefined) return;
    const to = String(event.payload.to) as keyof typeof STEP_OF_STATE;
    const step = STEP_OF_STATE[to] as Step | undefined;
    // Later fences are retries: their latency is the retry policy's backoff, not the scheduler's.
    if (step === undefined || Number(event.payload.fenceGeneration ?? 0) > 1) return;
    const due = await this.dueTimeOf(reader, event.occurrenceId);
    if (due === undefined) return;
    this.observe(step, Math.max(0, recordedAt - due) / 1000);
    if (step === 'start') this.dueAt.delete(event.occurrenceId);
  }

  private async dueTimeOf(reader: StoreReader, occurrenceId: string): Promise<number | undefined> {
    const known = this.dueAt.get(occurrenceId);
    if (known !== undefined) return known;
    const record = (await reader.get<OccurrenceRecord['data']>(KINDS.occurrence, occurrenceId)) as
      OccurrenceRecord | undefined;
    if (record === undefined) return undefined;
    const due = Date.parse(record.data.attributes.scheduledFor);
    if (this.dueAt.size >= REMEMBERED) this.dueAt.delete(this.dueAt.keys().next().value!);
    this.dueAt.set(occurrenceId, due);
    return due;
  }
}
