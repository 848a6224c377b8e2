import type { Store } from '../../src/store/store.js';

export interface StoreHarness {
  /** A fresh, empty store. */
  create(): Promise<Store>;
  /** For durable stores: close `store` and open the same storage again. */
  reopen?(store: Store): Promise<Store>;
  /**
   * Feed positions strictly increase in commit order but may skip numbers (PostgreSQL takes them from
   * transaction ids). Without it they are 0, 1, 2, … in commit order.
   */
  gappedPositions?: boolean;
}

/** Runs `body` on `store` and closes it, whatever happens. */
export async function using<T>(store: Store, body: (store: Store) => Promise<T>): Promise<T> {
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}
