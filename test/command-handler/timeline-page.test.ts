import { describe, expect, test } from 'vitest';
import { MAX_LOOKED_AT, timelinePage } from '../../src/command-handler/timeline-page.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store, TimelineEntry } from '../../src/store/store.js';

/** `n` runs of automation `a`, one a minute, every seventh failed, the rest succeeded. */
async function runs(n: number): Promise<Store> {
  const store = new MemoryStore();
  await store.transact(async (tx) => {
    for (let i = 0; i < n; i++) {
      const startedAt = new Date(Date.UTC(2026, 2, 2) + i * 60_000).toISOString();
      const state = i % 7 === 0 ? 'failed' : 'succeeded';
      await tx.put(
        'run',
        `run-${String(i).padStart(6, '0')}`,
        { snapshot: { value: state, context: {} }, attributes: { automationId: 'a', startedAt } },
        { expectedVersion: null },
      );
    }
  });
  return store;
}

/** Every page in turn, following `next`. */
async function walk(store: Store, keep?: (e: TimelineEntry) => boolean) {
  const seen: TimelineEntry[] = [];
  let before: { at: string; id: string } | undefined;
  for (let pages = 1; ; pages++) {
    const page = await store.read((r) =>
      timelinePage(r, 'run', { limit: 10, ...(before === undefined ? {} : { before }) }, keep),
    );
    expect(page.entries.length).toBeLessThanOrEqual(10);
    seen.push(...page.entries);
    if (page.next === undefined) return { seen, pages };
    before = page.next;
  }
}

describe('timelinePage', () => {
  test('pages through every entry newest first, each once, with or without a check', async () => {
    const store = await runs(95);
    const all = await walk(store);
    expect(all.pages).toBe(10);
    expect(all.seen.map((e) => e.id)).toEqual(
      Array.from({ length: 95 }, (_, i) => `run-${String(94 - i).padStart(6, '0')}`),
    );
    const failed = await walk(store, (e) => e.state === 'failed');
    expect(failed.seen.map((e) => e.id)).toEqual(all.seen.filter((e) => e.state === 'failed').map((e) => e.id));
    expect(failed.pages).toBe(2);
  });

  test('a check that keeps almost nothing ends a page after MAX_LOOKED_AT entries, and the next page goes on from there', async () => {
    const store = await runs(MAX_LOOKED_AT + 50);
    const first = await store.read((r) => timelinePage(r, 'run', { limit: 10 }, (e) => e.id === 'run-000000'));
    expect(first.entries).toEqual([]);
    expect(first.next).toBeDefined();
    const second = await store.read((r) =>
      timelinePage(r, 'run', { limit: 10, before: first.next! }, (e) => e.id === 'run-000000'),
    );
    expect(second.entries.map((e) => e.id)).toEqual(['run-000000']);
    expect(second.next).toBeUndefined();
  });
});
