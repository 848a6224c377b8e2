// An engine process's warm-up before the scale-out bench's measured burst: the same kind of burst (definitions due at
// one slot, worked by a running engine with the ledger runtime), on a store of its own beside the measured one, so
// that the measured burst finds the process's code compiled and optimised and its connections open, as in a daemon
// that has been running. Each process warms alone on as many occurrences, whatever the number of engines, so every
// configuration starts equally warm.
import { dirname, join } from 'node:path';
import { createEngine } from '../../src/engine/engine.js';
import { openStore } from '../../src/store/open-store.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { Store } from '../../src/store/store.js';
import { LedgerRuntime } from './ledger-runtime.js';
import { defineAll, DUE_DAILY_AT_TEN, offsetToSlot } from './setup.js';

/** Stops a warm-up that does not settle: the bench then fails rather than measuring a process still warming. */
const WARM_UP_LIMIT_MS = 120_000;

/** Where an engine process warms up: a schema of its own in the measured database, or a file beside the measured one. */
function warmLocation(location: string, schema: string, label: string) {
  const warmSchema = `${schema}_warm_${label}`;
  return location.startsWith('postgres')
    ? {
        open: () => PostgresStore.open(location, { schema: warmSchema, applicationName: `coven warm ${label}` }),
        schema: warmSchema,
      }
    : { open: () => openStore(join(dirname(location), `warm-${label}.sqlite`)), schema: undefined };
}

/**
 * Defines `count` definitions due at one slot on the warm-up store, runs an engine until it settled them all, and
 * closes everything it opened. Throws when they do not settle within {@link WARM_UP_LIMIT_MS}.
 */
export async function warmUp(options: {
  location: string;
  ledgerUrl: string;
  schema: string;
  label: string;
  count: number;
}): Promise<void> {
  const { location, ledgerUrl, schema, label, count } = options;
  const where = warmLocation(location, schema, label);
  const store: Store & { close(): Promise<void> } = await where.open();
  const runtime = new LedgerRuntime(ledgerUrl, `warm-${label}`, where.schema);
  try {
    const ids = Array.from({ length: count }, (_, i) => `warm-${label}-${i}`);
    await defineAll(store, runtime, ids, DUE_DAILY_AT_TEN);
    const offset = offsetToSlot();
    const engine = createEngine({
      store,
      runtimes: [runtime],
      clock: { now: () => new Date(Date.now() + offset) },
      instanceId: `warm-${label}-${process.pid}`,
      retention: false,
    });
    let settled = 0;
    try {
      await new Promise<void>((done, failed) => {
        const limit = setTimeout(() => failed(new Error(`warm-up settled ${settled} of ${count}`)), WARM_UP_LIMIT_MS);
        engine.start((report) => {
          settled += report.settled;
          if (settled >= count) {
            clearTimeout(limit);
            done();
          }
        });
      });
    } finally {
      await engine.stop();
    }
  } finally {
    await store.close();
    await runtime.close();
  }
}
