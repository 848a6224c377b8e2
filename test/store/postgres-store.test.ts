import { PostgresStore } from '../../src/store/postgres/index.js';
import type { Store } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { describeStoreConformance } from './store-conformance.js';

describePostgres('PostgreSQL store', (socketDir) => {
  let url: Promise<string> | undefined;
  let schemas = 0;
  const database = () => (url ??= freshDatabase(socketDir, 'conformance'));
  const stores = new WeakMap<Store, string>();
  describeStoreConformance('PostgreSQL', {
    create: async () => {
      const schema = `conformance_${schemas++}`;
      const store = await PostgresStore.open(await database(), { schema });
      stores.set(store, schema);
      return store;
    },
    reopen: async (store: Store) => {
      await store.close();
      const schema = stores.get(store)!;
      const again = await PostgresStore.open(await database(), { schema });
      stores.set(again, schema);
      return again;
    },
  });
});
