import fc from 'fast-check';

/**
 * Parameters for one property run. The seed comes from FC_SEED when set (to replay a failure), else from
 * the clock; it is printed either way, and fast-check's failure report repeats it with the shrunk
 * counterexample and its path.
 */
export function propertyParameters<T>(name: string, numRuns: number): fc.Parameters<T> {
  const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
  const runs = process.env.FC_RUNS === undefined ? numRuns : Number(process.env.FC_RUNS);
  console.info(`[property] ${name}: seed=${seed} runs=${runs} (replay with FC_SEED=${seed})`);
  return { seed, numRuns: runs, verbose: 1 };
}

/** A seed for properties driven outside fc.assert (suites that take a seed): printed the same way. */
export function propertySeed(name: string): number {
  const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
  console.info(`[property] ${name}: seed=${seed} (replay with FC_SEED=${seed})`);
  return seed;
}
