import { DefinitionState } from '../../../machines/index.js';
import { attemptIdFor } from '../../domain/ids.js';
import type {
  LiveWork,
  LiveWorkOptions,
  PutOptions,
  Store,
  StoreReader,
  StoredRecord,
  StoreTransaction,
} from '../../store/store.js';

/**
 * What a broken store does differently: how it presents a record to readers, and what it writes besides a
 * put it was asked for (in the same transaction).
 */
export interface StoreFault {
  present?(record: StoredRecord): StoredRecord;
  afterPut?(tx: StoreTransaction, record: StoredRecord, options: PutOptions): Promise<void>;
  /** How the store's index of live work reads. */
  presentLiveWork?(works: LiveWork[], options: LiveWorkOptions): LiveWork[];
}

/**
 * A store wrapper for the self-check's broken variants: the engine above it runs unchanged, and the
 * invariant checks read the inner store, so they see what was really committed.
 */
export class FaultyStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly fault: StoreFault,
  ) {}

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.inner.transact((tx) => {
      const reader = this.reader(tx);
      return body({
        ...reader,
        append: (s, d, e, o) => tx.append(s, d, e, o),
        delete: (k, i, v) => tx.delete(k, i, v),
        expire: (k, i, v) => tx.expire(k, i, v),
        trimLog: (s, b) => tx.trimLog(s, b),
        retireLog: (s) => tx.retireLog(s),
        put: async (k, i, d, o) => {
          const stored = await tx.put(k, i, d, o);
          await this.fault.afterPut?.(tx, stored, o);
          return stored;
        },
      });
    });
  }

  read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    return this.inner.read((r) => body(this.reader(r)));
  }

  onCommit(listener: () => void): () => void {
    return this.inner.onCommit(listener);
  }

  async checkpoint(): Promise<void> {
    await this.inner.checkpoint?.();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private reader(r: StoreReader): StoreReader {
    const present = <T>(record: StoredRecord<T>): StoredRecord<T> =>
      (this.fault.present?.(record) ?? record) as StoredRecord<T>;
    return {
      get: async <T>(k: string, i: string) => {
        const record = await r.get<T>(k, i);
        return record === undefined ? undefined : present(record);
      },
      list: async <T>(k: string, o?: Parameters<StoreReader['list']>[1]) => (await r.list<T>(k, o)).map(present),
      version: (k, i) => r.version(k, i),
      versions: (k, o) => r.versions(k, o),
      head: (s) => r.head(s),
      readLog: (s, o) => r.readLog(s, o),
      readFeed: (o) => r.readFeed(o),
      timeline: (k, o) => r.timeline(k, o),
      timelineCounts: (k, f) => r.timelineCounts(k, f),
      liveWork: async (k, o = {}) => {
        const works = await r.liveWork(k, o);
        return this.fault.presentLiveWork?.(works, o) ?? works;
      },
    };
  }
}

type Snapshot = { snapshot: { value: string; context: Record<string, unknown> }; attributes: Record<string, unknown> };
const dataOf = (record: StoredRecord) => record.data as Snapshot;

/** `planTombstoned`: tombstoned definitions read as active, so the scheduler keeps planning them. */
export const TOMBSTONES_READ_ACTIVE: StoreFault = {
  present(record) {
    if (record.kind !== 'definition' || dataOf(record).snapshot.value !== DefinitionState.tombstoned) return record;
    const data = dataOf(record);
    return { ...record, data: { ...data, snapshot: { ...data.snapshot, value: 'active' } } };
  },
};

/** `ignoreLiveWork`: an automation's live occurrences read as none, so overlap is never seen. */
export const LIVE_WORK_READS_EMPTY: StoreFault = {
  presentLiveWork(works, options) {
    return options.automationId === undefined ? works : [];
  },
};

/** `compactLiveHistory`: occurrences, runs and attempts all read as settled (sealed), live or not. */
export const LIVE_HISTORY_READS_SETTLED: StoreFault = {
  present(record) {
    return ['occurrence', 'run', 'attempt'].includes(record.kind) && !record.terminal
      ? { ...record, terminal: true }
      : record;
  },
};

/** `acceptFenceTwice`: each run accepted is written twice, so one fence generation owns two runs. */
export const RUN_ACCEPTED_TWICE: StoreFault = {
  async afterPut(tx, record, options) {
    if (record.kind !== 'run' || options.expectedVersion !== null || record.id.endsWith('-again')) return;
    const data = dataOf(record);
    const runId = `${record.id}-again`;
    await tx.put(
      'run',
      runId,
      { ...data, snapshot: { ...data.snapshot, context: { ...data.snapshot.context, runId } } },
      options,
    );
  },
};

/**
 * `rewritePriorAttempt`: opening an operator retry's attempt also edits the prior attempt's record. Only a
 * store that does not seal (see unsealed-store.ts) lets the edit through.
 */
export const RETRY_REWRITES_PRIOR: StoreFault = {
  async afterPut(tx, record, options) {
    if (record.kind !== 'attempt' || options.expectedVersion !== null) return;
    const data = dataOf(record) as Snapshot & { attributes: { retryClassification?: { classification: string } } };
    if (data.attributes.retryClassification?.classification !== 'operator_retry') return;
    const { runId, attemptNumber } = data.snapshot.context as { runId: string; attemptNumber: number };
    const priorId = attemptIdFor(runId, attemptNumber - 1);
    const prior = await tx.get<Snapshot>('attempt', priorId);
    if (prior === undefined) return;
    const attributes = { ...prior.data.attributes, stateReason: 'superseded by retry' };
    await tx.put('attempt', priorId, { ...prior.data, attributes }, { expectedVersion: prior.version });
  },
};

/**
 * `rewriteHistoricRevision`: committing a definition's new revision also moves its live occurrences onto it
 * (the revision is pinned at planning; moving it rewrites history).
 */
export const REVISE_MOVES_LIVE_OCCURRENCES: StoreFault = {
  async afterPut(tx, record, options) {
    if (record.kind !== 'definition-revision' || options.expectedVersion !== null) return;
    const { automationId, revision } = record.data as { automationId: string; revision: number };
    for (const { id } of await tx.liveWork('occurrence', { automationId })) {
      const occurrence = await tx.get<Snapshot>('occurrence', id);
      if (occurrence === undefined) continue;
      const attributes = { ...occurrence.data.attributes, automationRevision: revision };
      await tx.put('occurrence', id, { ...occurrence.data, attributes }, { expectedVersion: occurrence.version });
    }
  },
};
