// What a PostgreSQL cluster's client backends were doing through a measured window, sampled from
// pg_stat_activity: waiting for the engine's next statement (`idle in transaction`), running, or waiting on a lock
// or on WAL. Tells a burst bound by the engine's own work from one bound by the server or by locks.
import pg from 'pg';

/** Samples of each backend condition (`<wait event type>:<wait event>:<state>`, `cpu` when none), most first. */
export type WaitSamples = Array<[condition: string, samples: number]>;

/** Pause between samples: short enough for a burst of a few seconds to give thousands. */
const SAMPLE_EVERY_MS = 5;

const SAMPLE_SQL =
  "SELECT coalesce(wait_event_type, 'cpu') || ':' || coalesce(wait_event, '') || ':' || state AS condition, " +
  "count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() " +
  'GROUP BY 1';

/**
 * Starts sampling the cluster at `url` on a connection of its own; the answer stops it and returns the counts.
 *
 * @example
 * ```ts
 * const stop = await sampleWaits(cluster.url);
 * await burst();
 * for (const [condition, n] of await stop()) console.log(condition, n);
 * ```
 */
export async function sampleWaits(url: string): Promise<() => Promise<WaitSamples>> {
  const client = new pg.Client({ connectionString: url, application_name: 'wait sampler' });
  await client.connect();
  const counts = new Map<string, number>();
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      const { rows } = await client.query<{ condition: string; n: number }>(SAMPLE_SQL);
      for (const { condition, n } of rows) counts.set(condition, (counts.get(condition) ?? 0) + n);
      await new Promise((wake) => setTimeout(wake, SAMPLE_EVERY_MS));
    }
  })();
  return async () => {
    sampling = false;
    await loop;
    await client.end();
    return [...counts].sort((a, b) => b[1] - a[1]);
  };
}
