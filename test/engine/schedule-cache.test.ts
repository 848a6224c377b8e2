import { expect, test } from 'vitest';
import { createEngine } from '../../src/engine/engine.js';
import { SCHEDULE_CACHE_SIZE } from '../../src/domain/services.js';
import { MemoryStore } from '../../src/store/memory-store.js';

/** What the cache reads of a definition: its v1 trigger (and extensions, none here). */
const terms = (rrule: string, timezone: string) => ({ trigger: { schedule: { rrule, timezone } } });

test('definitions that share a rule and zone share one schedule; the cache keeps the most recently used', () => {
  const svc = createEngine({ store: new MemoryStore(), runtimes: [] }).services;
  const daily = svc.schedule(terms('FREQ=DAILY;BYHOUR=9', 'utc'));
  expect(svc.schedule(terms('FREQ=DAILY;BYHOUR=9', 'utc'))).toBe(daily);
  expect(svc.schedule(terms('FREQ=DAILY;BYHOUR=9', 'Europe/Berlin'))).not.toBe(daily);
  // Fill the cache with other rules while `daily` stays in use: it is kept, an idle one is evicted.
  const idle = svc.schedule(terms('FREQ=DAILY;BYHOUR=10', 'utc'));
  const zones = ['utc', ...Array.from({ length: 12 }, (_, h) => [`Etc/GMT+${h + 1}`, `Etc/GMT-${h + 1}`]).flat()];
  const distinct = new Set<string>();
  for (const zone of zones) {
    for (let a = 0; a < 24; a++) {
      for (const b of [a, (a + 1) % 24, (a + 12) % 24]) {
        const rule = `FREQ=WEEKLY;BYDAY=MO;BYHOUR=${a === b ? a : `${Math.min(a, b)},${Math.max(a, b)}`}`;
        svc.schedule(terms(rule, zone));
        distinct.add(`${zone} ${rule}`);
        if (distinct.size % 100 === 0) svc.schedule(terms('FREQ=DAILY;BYHOUR=9', 'utc'));
      }
    }
  }
  expect(distinct.size).toBeGreaterThan(SCHEDULE_CACHE_SIZE);
  expect(svc.schedule(terms('FREQ=DAILY;BYHOUR=9', 'utc'))).toBe(daily);
  expect(svc.schedule(terms('FREQ=DAILY;BYHOUR=10', 'utc'))).not.toBe(idle);
});
