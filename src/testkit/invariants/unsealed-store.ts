import type { PutOptions, Store, StoreReader, StoreTransaction } from '../../store/store.js';

/**
 * A store that ignores the terminal seal: only for the self-check of `retry-new-attempt`, whose broken
 * variant rewrites a prior attempt — a write every real store refuses.
 */
export class UnsealedStore implements Store {
  constructor(private readonly inner: Store) {}

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.inner.transact((tx) =>
      body({
        get: (k, i) => tx.get(k, i),
        version: (k, i) => tx.version(k, i),
        list: (k, o) => tx.list(k, o),
        versions: (k, o) => tx.versions(k, o),
        head: (s) => tx.head(s),
        readLog: (s, o) => tx.readLog(s, o),
        readFeed: (o) => tx.readFeed(o),
        liveWork: (k, o) => tx.liveWork(k, o),
        timeline: (k, o) => tx.timeline(k, o),
        timelineCounts: (k, f) => tx.timelineCounts(k, f),
        append: (s, d, e, o) => tx.append(s, d, e, o),
        delete: (k, i, v) => tx.delete(k, i, v),
        expire: (k, i, v) => tx.expire(k, i, v),
        trimLog: (s, b) => tx.trimLog(s, b),
        retireLog: (s) => tx.retireLog(s),
        put: (k, i, d, o: PutOptions) => tx.put(k, i, d, { expectedVersion: o.expectedVersion }),
      }),
    );
  }

  read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    return this.inner.read(body);
  }

  onCommit(listener: () => void): () => void {
    return this.inner.onCommit(listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
