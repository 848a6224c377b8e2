import type { Store, StoredRecord, StoreReader } from '../../store/store.js';

/**
 * A store port wrapper that alters what readers see of chosen records, as a disk or an outside writer would:
 * the engine and the doctor read through it, the records underneath stay as committed.
 */
export class TamperingStore {
  private readonly tampered = new Map<string, (data: unknown) => unknown>();
  readonly store: Store;

  constructor(inner: Store) {
    const reading = (reader: StoreReader) => this.wrap(reader);
    this.store = new Proxy(inner, {
      get: (target, key, receiver) => {
        if (key === 'read')
          return <R>(body: (r: StoreReader) => Promise<R> | R) => target.read((r) => body(reading(r)));
        if (key === 'transact')
          return <R>(body: (tx: Parameters<Parameters<Store['transact']>[0]>[0]) => Promise<R> | R) =>
            target.transact((tx) => body(reading(tx) as typeof tx));
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** From now on readers see `change(data)` for this record. */
  tamper(kind: string, id: string, change: (data: unknown) => unknown): void {
    this.tampered.set(`${kind}/${id}`, change);
  }

  private alter<T>(record: StoredRecord<T>): StoredRecord<T> {
    const change = this.tampered.get(`${record.kind}/${record.id}`);
    return change === undefined ? record : { ...record, data: change(record.data) as T };
  }

  private wrap<R extends StoreReader>(reader: R): R {
    return new Proxy(reader, {
      get: (target, key, receiver) => {
        if (key === 'get')
          return async (kind: string, id: string) => {
            const found = await target.get(kind, id);
            return found === undefined ? undefined : this.alter(found);
          };
        if (key === 'list')
          return async (kind: string, options?: Parameters<StoreReader['list']>[1]) =>
            (await target.list(kind, options)).map((r) => this.alter(r));
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}
