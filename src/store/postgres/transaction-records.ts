import { StagedWrites, type StagedWrite } from '../staged-writes.js';
import type { PutOptions, StoredRecord } from '../store.js';

export type { StagedWrite };

/** An append made in this job and not yet sent. */
export interface StagedAppend {
  readonly stream: string;
  readonly sequence: number;
  /** Its feed position: NaN while the transaction's id is not known yet (the slot fixes it then). */
  readonly position: number;
  /** Its place in the transaction's range of positions. */
  readonly slot: number;
  readonly text: string;
}

const keyOf = (kind: string, id: string) => `${kind}\u0000${id}`;

/**
 * What one group transaction knows of its records, so that reading a record again and writing it again cost no
 * round trip. Under REPEATABLE READ a record read once reads the same until this transaction writes it, and what
 * it wrote is what it would read back: both are answered from here. A job's writes are staged
 * ({@link StagedWrites}) and its appends with them, and sent together in a few statements at the job's end, or
 * before anything that reads the database's records or log (a list, a query, a lock, a removal, a log read).
 */
export class TransactionRecords {
  private readonly known = new Map<string, StoredRecord<unknown> | null>();
  private readonly staged = new StagedWrites();
  private appends: StagedAppend[] = [];

  /** The record as this transaction last saw or wrote it: null when absent, undefined when it never looked. */
  lookup<T>(kind: string, id: string): StoredRecord<T> | null | undefined {
    return this.known.get(keyOf(kind, id)) as StoredRecord<T> | null | undefined;
  }

  /** What a read of the database returned. */
  remember(kind: string, id: string, record: StoredRecord<unknown> | undefined): void {
    this.known.set(keyOf(kind, id), record ?? null);
  }

  /** A record removed in the database by this transaction. */
  forget(kind: string, id: string): void {
    this.known.set(keyOf(kind, id), null);
  }

  /** Stages a put (see {@link StagedWrites.stage}); returns the record as stored. */
  stage<T>(kind: string, id: string, data: T, options: PutOptions): StoredRecord<T> {
    const record = this.staged.stage(kind, id, data, options, this.lookup(kind, id));
    this.known.set(keyOf(kind, id), record);
    return record;
  }

  /** A removal judged against the staged record, if any (see {@link StagedWrites.unstage}). */
  unstage(kind: string, id: string, expectedVersion: number, evenSealed: boolean): number | null | undefined {
    return this.staged.unstage(kind, id, expectedVersion, evenSealed);
  }

  /** The staged writes, handed over to be sent. */
  takeStaged(): StagedWrite[] {
    return this.staged.take();
  }

  /** Stages an append whose sequence and position the caller already took. */
  stageAppend(append: StagedAppend): void {
    this.appends.push(append);
  }

  /** Gives the staged appends their positions once the transaction's first is known. */
  placeAppends(position: (slot: number) => number): void {
    this.appends = this.appends.map((append) => ({ ...append, position: position(append.slot) }));
  }

  /** The staged appends in the order made, handed over to be sent. */
  takeAppends(): StagedAppend[] {
    const appends = this.appends;
    this.appends = [];
    return appends;
  }

  /** A job rolled back to its savepoint: what it read or wrote may no longer be what the database holds. */
  clear(): void {
    this.known.clear();
    this.staged.clear();
    this.appends = [];
  }
}
