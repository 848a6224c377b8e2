import { deepFreeze, freezeIfPlain } from './deep-freeze.js';
import { StoreConflictError, TerminalRecordError, type PutOptions, type StoredRecord } from './store.js';

/** A record written in this job and not yet sent: its last state and the version its stored row holds. */
export interface StagedWrite {
  readonly record: StoredRecord<unknown>;
  /** The record's data as it will be stored. */
  readonly text: string;
  /** The version the stored row has (null: no row), which the statement that sends the write compares. */
  readonly stored: number | null;
}

/**
 * The puts of one job held back so that a record the job moves several times is sent once, at its last state.
 * Versions advance per put exactly as if each had been sent, so callers see what they always saw. A put whose
 * compare-and-set the caller's knowledge of the record can judge is refused at once, as a sent one would be; one
 * against a row the transaction never read is judged when sent (the job then rolls back alone).
 */
/** A staged write whose text is written out when it is sent (see {@link StagedWrites.stage}). */
type Staged = Omit<StagedWrite, 'text'> & { readonly text: string | undefined };

export class StagedWrites {
  private readonly writes = new Map<string, Map<string, Staged>>();
  private count = 0;

  /** The staged record, if this job wrote it. */
  get<T>(kind: string, id: string): StoredRecord<T> | undefined {
    return this.writes.get(kind)?.get(id)?.record as StoredRecord<T> | undefined;
  }

  /**
   * Stages a put; `current` is the record as the transaction knows it (null: known absent, undefined: never
   * read). Returns the record as it will be stored, frozen.
   */
  stage<T>(
    kind: string,
    id: string,
    data: T,
    options: PutOptions,
    current: StoredRecord<unknown> | null | undefined,
  ): StoredRecord<T> {
    const expected = options.expectedVersion;
    const known = this.get(kind, id) ?? current;
    if (known !== undefined) {
      if (known?.terminal === true) throw new TerminalRecordError(kind, id);
      const knownVersion = known?.version ?? null;
      if (knownVersion !== expected) throw StoreConflictError.forVersion(kind, id, expected, knownVersion);
    }
    // Plain data handed over is kept as given, frozen, and written out as text only when sent: once for a record the
    // job moves several times. Anything else is copied the JSON way now.
    let text: string | undefined;
    let stored = data;
    if (options.handOver !== true || !freezeIfPlain(data)) {
      text = JSON.stringify(data);
      stored = deepFreeze(JSON.parse(text) as T);
    }
    const record = Object.freeze({
      kind,
      id,
      version: (expected ?? 0) + 1,
      terminal: options.terminal === true,
      data: stored,
    });
    let ofKind = this.writes.get(kind);
    if (ofKind === undefined) this.writes.set(kind, (ofKind = new Map()));
    const earlier = ofKind.get(id);
    if (earlier === undefined) this.count++;
    ofKind.set(id, { record, text, stored: earlier === undefined ? expected : earlier.stored });
    return record;
  }

  /**
   * A removal of `kind`/`id` at `expectedVersion`: judged against the staged record when there is one, which is
   * then no longer to be sent. Answers the version the stored row must have for the removal to be sent (null:
   * the record was created in this job and never sent, so nothing is to be removed), or undefined when the record
   * is not staged (the removal is judged by the store alone).
   */
  unstage(kind: string, id: string, expectedVersion: number, evenSealed: boolean): number | null | undefined {
    const write = this.writes.get(kind)?.get(id);
    if (write === undefined) return undefined;
    if (write.record.terminal && !evenSealed) throw new TerminalRecordError(kind, id);
    if (write.record.version !== expectedVersion)
      throw StoreConflictError.forVersion(kind, id, expectedVersion, write.record.version);
    this.writes.get(kind)!.delete(id);
    this.count--;
    return write.stored;
  }

  get size(): number {
    return this.count;
  }

  /** The staged writes, handed over to be sent; none are left staged. */
  take(): StagedWrite[] {
    const writes: StagedWrite[] = [];
    for (const ofKind of this.writes.values())
      for (const { record, text, stored } of ofKind.values())
        writes.push({ record, text: text ?? JSON.stringify(record.data), stored });
    this.clear();
    return writes;
  }

  clear(): void {
    this.writes.clear();
    this.count = 0;
  }
}
