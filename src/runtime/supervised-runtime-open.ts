import { PostgresSessionEvidence } from './postgres-session-evidence.js';
import { SupervisedRuntime, type SupervisedRuntimeOptions } from './supervised-runtime.js';

/**
 * A {@link SupervisedRuntime} on the PostgreSQL store at `url` (schema `coven`), with its evidence table made
 * ready; answers it with what closes its connections. `refuse` turns an options error (a bad cwd root) into
 * the caller's error; the evidence's connections are closed first.
 */
export async function openSupervisedRuntime(
  url: string,
  options: Omit<SupervisedRuntimeOptions, 'evidence'>,
  refuse: (error: Error) => Error = (error) => error,
): Promise<{ runtime: SupervisedRuntime; close: () => Promise<void> }> {
  const evidence = await PostgresSessionEvidence.open(url);
  try {
    return { runtime: new SupervisedRuntime({ ...options, evidence }), close: () => evidence.close() };
  } catch (error) {
    await evidence.close();
    throw refuse(error as Error);
  }
}
