import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import type { Store } from '../../src/store/store.js';
import { describeStoreConformance } from './store-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-json-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;

describeStoreConformance('JSON file', {
  create: () => JsonFileStore.open(join(dir, `store-${counter++}.json`)),
  reopen: async (store: Store) => {
    await store.close();
    return JsonFileStore.open((store as JsonFileStore).file);
  },
});

// Every commit starts a fold (compactAtBytes 1), so sealed records and log entries keep moving to disk while
// later transactions read and write them: the same behaviour must hold whether a read is served from memory
// or from the snapshot file.
describeStoreConformance('JSON file folding after every commit', {
  create: () => JsonFileStore.open(join(dir, `store-${counter++}.json`), { compactAtBytes: 1 }),
  reopen: async (store: Store) => {
    await store.close();
    return JsonFileStore.open((store as JsonFileStore).file, { compactAtBytes: 1 });
  },
});
