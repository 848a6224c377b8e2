import { deepFreeze } from '../deep-freeze.js';
import { StoreConflictError, TerminalRecordError, type PutOptions, type StoredRecord } from '../store.js';

/** A record written in this job and not yet sent: its final state and the version the database row holds. */
export interface StagedWrite {
  readonly record: StoredRecord<unknown>;
  readonly text: string;
  /** The version the row has in the database (null: no row), which the statement that sends it compares. */
  readonly stored: number | null;
}

/** An append made in this job and not yet sent. */
export interface StagedAppend {
  readonly stream: string;
  readonly sequence: number;
  readonly position: number;
  readonly text: string;
}

const keyOf = (kind: string, id: string) => `${kind}\u0000${id}`;

/**
 * What one group transaction knows of its records, so that reading a record again and writing it again cost no
 * round trip. Under REPEATABLE READ a record read once reads the same until this transaction writes it, and what
 * it wrote is what it would read back: both are answered from here. Writes are staged and sent once per job
 * (the record's last state, however many times the job moved it; all of a job's records and appends in a few
 * statements), before anything that reads the database's records or log (a list, a query, a lock, a removal,
 * a log read) and before the job's savepoint is released.
 * Versions advance per write exactly as if each had been sent, so what callers see is unchanged; only a
 * compare-and-set against a row this transaction never read is decided when the write is sent.
 */
export class TransactionRecords {
  private readonly known = new Map<string, StoredRecord<unknown> | null>();
  private readonly staged = new Map<string, StagedWrite>();
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

  /**
   * Stages a put: refused now when this transaction knows the record and the compare-and-set cannot hold (as the
   * statement would refuse it), else kept for {@link takeStaged}. Returns the record as stored.
   */
  stage<T>(kind: string, id: string, data: T, options: PutOptions): StoredRecord<T> {
    const key = keyOf(kind, id);
    const expected = options.expectedVersion;
    const current = this.known.get(key);
    if (current !== undefined) {
      if (current?.terminal === true) throw new TerminalRecordError(kind, id);
      const currentVersion = current?.version ?? null;
      if (currentVersion !== expected) throw StoreConflictError.forVersion(kind, id, expected, currentVersion);
    }
    const text = JSON.stringify(data);
    const record = deepFreeze({
      kind,
      id,
      version: (expected ?? 0) + 1,
      terminal: options.terminal === true,
      data: JSON.parse(text) as T,
    });
    const earlier = this.staged.get(key);
    this.staged.set(key, { record, text, stored: earlier === undefined ? expected : earlier.stored });
    this.known.set(key, record);
    return record;
  }

  /** The staged writes in the order first staged, handed over to be sent; none are left staged. */
  takeStaged(): StagedWrite[] {
    const writes = [...this.staged.values()];
    this.staged.clear();
    return writes;
  }

  /** Stages an append whose sequence and position the caller already took. */
  stageAppend(append: StagedAppend): void {
    this.appends.push(append);
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
