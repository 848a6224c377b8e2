import type { TestProject } from 'vitest/node';
import { missingServerBinaries, startCluster } from './postgres-cluster.js';

/** What the PostgreSQL tests get: the throwaway cluster's socket folder, or why there is none. */
export type PostgresTarget = { readonly socketDir: string } | { readonly unavailable: string };

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: PostgresTarget;
  }
}

/**
 * Vitest global setup: starts one throwaway PostgreSQL cluster for the whole run whenever the server binaries
 * are present, and stops and deletes it afterwards. Tests make their own database in it (test/support/postgres.ts).
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const missing = missingServerBinaries();
  if (missing !== undefined) {
    project.provide('postgres', { unavailable: missing });
    return undefined;
  }
  const cluster = await startCluster();
  project.provide('postgres', { socketDir: cluster.dir });
  return () => cluster.stop();
}
