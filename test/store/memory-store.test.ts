import { MemoryStore } from '../../src/store/memory-store.js';
import { describeStoreConformance } from './store-conformance.js';

describeStoreConformance('memory', { create: async () => new MemoryStore() });
