/**
 * One record as the store keeps it. `version` starts at 1 and grows by one with every write, which is
 * what compare-and-set compares. A record written with `terminal: true` can never change again.
 */
export interface StoredRecord<T = unknown> {
  readonly kind: string;
  readonly id: string;
  readonly version: number;
  readonly terminal: boolean;
  readonly data: T;
}

/** Where an entry of an append-only stream sits: `sequence` is gapless per stream from 0, `position` global. */
export interface LogPosition {
  readonly stream: string;
  readonly sequence: number;
  readonly position: number;
}

/** One entry of an append-only stream, with its data. */
export interface LogEntry<T = unknown> extends LogPosition {
  readonly data: T;
}

/** A record's id and version, without its data. */
export type RecordVersion = { readonly id: string; readonly version: number };

export interface PutOptions {
  /** `null`: the record must not exist yet. A number: the stored version must equal it. */
  expectedVersion: number | null;
  /** Seal the record: every later put or delete of it is refused. */
  terminal?: boolean;
  /**
   * The caller gives `data` up: a store may keep it as it is, frozen in place, instead of a copy (when it is plain
   * JSON data; anything else is still copied). The caller must then change neither it nor anything inside it.
   */
  handOver?: boolean;
}

/** Options of {@link StoreTransaction.append}. */
export interface AppendOptions {
  /** As {@link PutOptions.handOver}: the caller gives `data` up, and changes neither it nor anything inside it. */
  handOver?: boolean;
}

export interface ReadLogOptions {
  /** Return entries strictly after this sequence (or global position, for the feed); -1 = from the start. */
  after?: number;
  limit?: number;
}

export interface ListOptions {
  /** Only records whose id sorts after this one (string order): the next page after the last id seen. */
  after?: string;
  /** Only records whose id sorts before this one (string order): a range read over ids that encode an order. */
  before?: string;
  /** At most this many, lowest ids first. */
  limit?: number;
}

/** The kinds whose records that are not yet terminal every store indexes: see {@link StoreReader.liveWork}. */
export type LiveKind = 'occurrence' | 'attempt';

/**
 * What a pass decides on about one live occurrence or attempt, read from the store's index of live work
 * instead of the record: its machine state, automation, when it comes due, its lease and its deadline. Fields
 * the record does not hold (an attempt has no schedule) are null.
 */
export interface LiveWork {
  readonly id: string;
  readonly state: string;
  readonly automationId: string | null;
  readonly scheduledFor: string | null;
  readonly notBefore: string | null;
  readonly leaseExpiresAt: string | null;
  readonly deadlineAt: string | null;
  /** The definition revision an occurrence was planned for. */
  readonly automationRevision: number | null;
  /** The engine instance whose claim fences an occurrence (null: unclaimed). */
  readonly claimedBy: string | null;
  /** The engine instance that launched an attempt's session (null: not launched). */
  readonly launchedBy: string | null;
}

export interface LiveWorkOptions {
  /** Only the live work of this automation. */
  automationId?: string;
  /** Leave out what these engine instances hold: the occurrences they claimed, the attempts they launched. */
  exceptHeldBy?: readonly string[];
}

/** What a step tells {@link StoreTransaction.prefetch} beyond the reads it names. */
export interface PrefetchOptions {
  /** The step will append to the feed: a store that numbers feed entries per transaction fetches that with it. */
  readonly appending?: boolean;
  /**
   * The step will ask this automation's live occurrences (`liveWork('occurrence', { automationId })`) before it
   * writes anything: a store where each read is a round trip fetches them with the rest.
   */
  readonly liveOccurrencesOf?: string;
  /**
   * The step reads what this store committed moments ago (a launch's answer reads what its adoption wrote). A
   * store that remembers its own commits may answer the step's reads from that memory, without a round trip, when
   * it holds every record and stream head named (a record in `absentUnlessRemembered` counts as absent when it
   * does not), and check them in the statement that sends the step's writes: when one moved, nothing commits and
   * the step's body runs again from the start, reading the database. Only for a body that may run twice; its
   * appends' positions are known once it commits (NaN before).
   */
  readonly recentCommits?: { readonly absentUnlessRemembered?: ReadonlyArray<readonly [kind: string, id: string]> };
}

/** The kinds every store keeps in time order for the operator's reads: see {@link StoreReader.timeline}. */
export type TimelineKind = 'occurrence' | 'run';

/** One occurrence (at its slot) or run (at its start) as a timeline lists it, without its record. */
export interface TimelineEntry {
  readonly id: string;
  /** An occurrence's slot or a run's start: an ISO instant. */
  readonly at: string;
  readonly state: string;
  readonly automationId: string;
}

/** Which entries of a timeline a read keeps; an empty list keeps none. */
export interface TimelineFilter {
  /** Only entries of these automations. */
  automationIds?: readonly string[];
  /** Only entries in these machine states. */
  states?: readonly string[];
  /** Only entries at or after this ISO instant. */
  from?: string;
  /** Only entries before this ISO instant. */
  to?: string;
}

/** One page of a timeline, newest first. */
export interface TimelineOptions extends TimelineFilter {
  /** Only entries older than this one (an earlier instant, or the same instant and a lower id): the next page. */
  before?: { at: string; id: string };
  limit: number;
}

/** Consistent reads: inside a transaction they see its own writes; outside, the last durable commit. */
export interface StoreReader {
  get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined>;
  /** Stores whose every read is a round trip (PostgreSQL): the records of `kind` among `ids` that exist, at once. */
  getMany?<T>(kind: string, ids: readonly string[]): Promise<Array<StoredRecord<T>>>;
  /** A record's version without its data (undefined when absent): a copy read earlier, checked unparsed. */
  version(kind: string, id: string): Promise<number | undefined>;
  /** The records of a kind in id order: all of them, or the range `options` names. */
  list<T>(kind: string, options?: ListOptions): Promise<Array<StoredRecord<T>>>;
  /**
   * What {@link list} would return, as ids and versions only: checks many copies read earlier at once
   * without reading or parsing their data again.
   */
  versions(kind: string, options?: ListOptions): Promise<RecordVersion[]>;
  /**
   * The records of `kind` that are not terminal, as {@link LiveWork} summaries in id order: answered from an
   * index the store keeps with every commit (columns with indexes on SQL, maps in memory), so a pass never
   * reads every live record to find the few it must act on.
   */
  liveWork(kind: LiveKind, options?: LiveWorkOptions): Promise<LiveWork[]>;
  /** Whether {@link StoreTransaction.lockDueOccurrences} would find anything due at `now` (held rows too). */
  hasDueOccurrences?(now: string): Promise<boolean>;
  /**
   * Occurrences by slot or runs by start, newest first (same instant: id descending), one page of those the
   * filter keeps: answered from an index every store keeps (indexes on SQL, a sorted array in memory), so a
   * page costs about its size and never a read of the whole kind.
   */
  timeline(kind: TimelineKind, options: TimelineOptions): Promise<TimelineEntry[]>;
  /** How many entries of a timeline the filter keeps, by state (states with none are left out). */
  timelineCounts(kind: TimelineKind, filter: TimelineFilter): Promise<Record<string, number>>;
  /** The sequence the next append to `stream` will get (0 for an empty stream). */
  head(stream: string): Promise<number>;
  readLog<T>(stream: string, options?: ReadLogOptions): Promise<Array<LogEntry<T>>>;
  /** Every stream's entries in global commit order; `after` and the result use global positions. */
  readFeed<T>(options?: ReadLogOptions): Promise<Array<LogEntry<T>>>;
}

export interface StoreTransaction extends StoreReader {
  /**
   * Stores a copy of `data` at `expectedVersion + 1` (compare-and-set; `null` = must not exist yet) and returns
   * the stored record, frozen. Callers may hand over objects they share (a snapshot's context, say): no store
   * keeps or freezes the object it was given, unless told it is handed over ({@link PutOptions.handOver}).
   */
  put<T>(kind: string, id: string, data: T, options: PutOptions): Promise<StoredRecord<T>>;
  delete(kind: string, id: string, expectedVersion: number): Promise<void>;
  /**
   * Appends a copy of `data` to a stream and answers where it went (the data is the caller's: no store hands
   * back a copy nobody reads). With `expectedSequence` the append is a compare-and-set on the stream head:
   * it fails unless the entry would get exactly that sequence. With `handOver`, a store that keeps entries as
   * objects may keep plain data as it is, frozen in place, instead of a copy.
   */
  append<T>(stream: string, data: T, expectedSequence?: number, options?: AppendOptions): Promise<LogPosition>;
  /**
   * Retention only: removes a record whether or not it is sealed (compare-and-set on its version). Nothing
   * else may remove a sealed record; history leaves the store through retention alone.
   */
  expire(kind: string, id: string, expectedVersion: number): Promise<void>;
  /**
   * Retention only: drops the entries of `stream` with a sequence below `before`. The newest entry always
   * stays (`before` ≤ head − 1), so the head never moves back and a sequence is never given out twice.
   * Returns how many entries were dropped.
   */
  trimLog(stream: string, before: number): Promise<number>;
  /**
   * Retention only: removes every entry of `stream`, so it reads as a stream never written (head 0). For
   * history nothing will append to again: a later append starts the stream over at sequence 0. Refused with
   * {@link LogRetireError} while the stream holds the feed's newest entry, so no store ever hands out a global
   * position twice (SQLite derives the next one from the newest entry). Returns how many entries were removed.
   */
  retireLog(stream: string): Promise<number>;
  /**
   * Stores several processes write at once (PostgreSQL) have it: locks the record for the rest of this
   * transaction unless another writer's transaction holds it, and says whether it did (true for a record that
   * does not exist). False means another engine is working on the record right now: skip it instead of queueing
   * behind that engine. Correctness never rests on it — compare-and-set still decides every write — it only keeps
   * engines from doing the same work at once. Stores with one writer leave it out.
   */
  lockUnlessBusy?(kind: string, id: string): Promise<boolean>;
  /** Stores engines share: this transaction's commit wakes no commit listener, here or in another engine. */
  quiet?(): void;
  /**
   * Says this transaction's commit is routine: its writer carries on itself with what it commits (a launch it
   * sends once the commit is durable, a launch answer that leaves its session running or its run settled), so
   * nothing in it waits for a pass. {@link Store.onCommit} listeners hear a commit as routine only when every
   * transaction in it that wrote (a quiet one aside) said so; a store without this method hears none as routine.
   */
  routine?(): void;
  /**
   * Stores whose every read is a round trip (PostgreSQL) have it: reads the records (`[kind, id]`) and stream
   * heads a step is about to ask for, in one statement each, so its `get`s and `head`s answer from what this
   * transaction holds. A hint only: what it returns is what those reads would have returned.
   */
  prefetch?(
    records: ReadonlyArray<readonly [kind: string, id: string]>,
    streams: readonly string[],
    options?: PrefetchOptions,
  ): Promise<void>;
  /**
   * Stores several engines share (PostgreSQL): in one statement, locks for the rest of this transaction up to
   * `limit` planned or eligible occurrences due at `now`, earliest first, passing over those another engine's
   * transaction holds, those named in `skip` and those of the automations in `othersShare` (another live engine's
   * to claim); returns their ids. Only locks: every change to them is still their machine's transition, written by
   * the caller in this transaction.
   */
  lockDueOccurrences?(
    now: string,
    limit: number,
    skip: readonly string[],
    othersShare?: readonly string[],
  ): Promise<string[]>;
}

/**
 * The persistence port. Each `transact` body runs alone against a consistent view and commits all its
 * writes and appends atomically, or none of them when it throws. Implementations: {@link MemoryStore},
 * {@link JsonFileStore}, {@link SqliteStore}.
 *
 * @example
 * ```ts
 * await store.transact(async (tx) => {
 *   const current = await tx.get<Definition>('definition', 'nightly');
 *   await tx.put('definition', 'nightly', next, { expectedVersion: current?.version ?? null });
 *   await tx.append('automation/nightly', { kind: 'definition.revised' });
 * });
 * ```
 */
export interface Store {
  /**
   * Other engines may hold this store at the same time (PostgreSQL); absent or false on single-owner stores
   * (JSON, SQLite, memory), whose lock admits one engine at a time.
   */
  readonly sharedByEngines?: boolean;
  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R>;
  read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R>;
  /**
   * Calls `listener` after every durable commit that changed something; returns the unsubscribe. `source` is
   * `outside` for a commit another store made on the same data (PostgreSQL's other engines), else `local`;
   * `routine` is true for a local commit whose every writing transaction called {@link StoreTransaction.routine}.
   */
  onCommit(listener: CommitListener): () => void;
  /**
   * Upkeep a store defers to the end of a burst of commits, never needed for correctness (SQLite: folds its
   * write-ahead log into the database file). The engine calls it after each pass.
   */
  checkpoint?(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Visits every record of a kind in id order a page at a time, so a caller never holds (or, on SQLite,
 * parses) the whole kind at once: listing a large kind whole each pass grew a daemon's heap by that kind's size.
 */
export async function forEachPage<T>(
  reader: StoreReader,
  kind: string,
  pageSize: number,
  visit: (page: Array<StoredRecord<T>>) => void | Promise<void>,
): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const page = await reader.list<T>(kind, { ...(after === undefined ? {} : { after }), limit: pageSize });
    if (page.length > 0) await visit(page);
    if (page.length < pageSize) return;
    after = page.at(-1)!.id;
  }
}

/** Who made a commit a {@link Store.onCommit} listener hears of: this store, or another store on the same data. */
export type CommitSource = 'local' | 'outside';

/** What a {@link Store.onCommit} listener is told of a commit: who made it, and whether it was routine. */
export type CommitListener = (source?: CommitSource, routine?: boolean) => void;

/** The listener set every store keeps for {@link Store.onCommit}. */
export class CommitListeners {
  private readonly listeners = new Set<CommitListener>();

  add(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(source: CommitSource = 'local', routine = false): void {
    for (const listener of [...this.listeners]) listener(source, routine);
  }
}

export * from './store-errors.js';
