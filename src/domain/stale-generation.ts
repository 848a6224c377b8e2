/**
 * A pass (or a lease renewal) of an engine instance whose owner lease a newer generation of the same instance id
 * now holds: a restarted process took over, so this one is refused and commits nothing. Also thrown when two
 * instances of one id start at the same instant and the other's acquisition committed first.
 *
 * @example
 * ```ts
 * try {
 *   await engine.tick();
 * } catch (error) {
 *   if (error instanceof StaleGenerationError) await engine.stop(); // a restarted process took over
 *   else throw error;
 * }
 * ```
 */
export class StaleGenerationError extends Error {
  constructor(
    readonly instanceId: string,
    /** This instance's generation (null: it never acquired one). */
    readonly generation: number | null,
    /** The generation that holds the lease. */
    readonly currentGeneration: number,
  ) {
    super(
      `engine ${instanceId}${generation === null ? '' : ` generation ${generation}`} is stale: ` +
        `generation ${currentGeneration} holds its owner lease; this pass is refused and commits nothing`,
    );
    this.name = 'StaleGenerationError';
  }
}
