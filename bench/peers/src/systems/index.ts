// The system a child runs, from its spec.
import type { ChildSpec } from '../protocol.js';
import { BullmqSystem } from './bullmq.js';
import { CovenSystem } from './coven.js';
import { GraphileWorkerSystem } from './graphile.js';
import { PgBossSystem } from './pgboss.js';
import type { SystemUnderTest } from './system.js';

export async function openSystem(spec: ChildSpec): Promise<SystemUnderTest> {
  const { pgUrl, redisPort } = spec.servers;
  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${spec.system} needs ${what}`);
    return value;
  };
  switch (spec.system) {
    case 'graphile-worker':
      return new GraphileWorkerSystem(need(pgUrl, 'PostgreSQL'));
    case 'pg-boss':
      return new PgBossSystem(need(pgUrl, 'PostgreSQL'), spec.concurrency);
    case 'bullmq':
      return new BullmqSystem(need(redisPort, 'Redis'));
    case 'coven-sqlite':
      return new CovenSystem('sqlite', spec.dir, spec.concurrency, undefined);
    case 'coven-json':
      return new CovenSystem('json', spec.dir, spec.concurrency, undefined);
    case 'coven-memory':
      return new CovenSystem('memory', spec.dir, spec.concurrency, undefined);
    case 'coven-postgres':
      return new CovenSystem('postgres', spec.dir, spec.concurrency, need(pgUrl, 'PostgreSQL'));
    // Its runtime gives no session-exit cues: each exit waits for the engine's next pass, as before issue 27.
    case 'coven-sqlite-polled':
      return new CovenSystem('sqlite', spec.dir, spec.concurrency, undefined, false);
    // The same system on the engine of the baseline revision (`--baseline <rev>`), for before/after in one run.
    case 'coven-sqlite-baseline':
      return new CovenSystem(
        'sqlite',
        spec.dir,
        spec.concurrency,
        undefined,
        true,
        need(spec.baselineRoot, '--baseline'),
      );
    case 'coven-postgres-baseline':
      return new CovenSystem(
        'postgres',
        spec.dir,
        spec.concurrency,
        need(pgUrl, 'PostgreSQL'),
        true,
        need(spec.baselineRoot, '--baseline'),
      );
  }
}
