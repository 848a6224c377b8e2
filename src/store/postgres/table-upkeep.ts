/** Rows changed before a store vacuums and analyzes its tables the first time, however small they are. */
export const MIN_CHANGES_BEFORE_UPKEEP = 1_000;
/**
 * Tables larger than this (rows, by the planner's estimate) are left to autovacuum alone: their plans no longer
 * change with their size, and a vacuum of them is no longer cheap enough to run on the store's own account.
 */
export const MAX_ROWS_FOR_UPKEEP = 200_000;

/** Runs one SQL command outside any transaction (on a pooled connection). */
type RunCommand = (sql: string) => Promise<unknown>;

/**
 * Vacuums and analyzes a young store's tables as the store's own writes grow them.
 *
 * Why: the store's statements run on generic plans (postgres-store.ts), and a connection plans each once, against
 * the statistics of that moment. A new store's first plans see nearly empty tables and pick sequential scans,
 * hash joins and whichever index is at hand, choices that stay cheap only while the tables are small: a run-now's
 * prefetch on such a plan cost 0.4–0.8 ms of server time instead of 0.08 ms once the tables held a few thousand
 * rows. PostgreSQL plans again after an ANALYZE of a table a plan reads, and autovacuum acts only after 10–20 % of
 * a table changed and at most once a minute, so a young store would run on its first plans for its first minutes,
 * its bitmap scans visiting every dead row version its updates left (a bitmap scan never marks them dead).
 *
 * This runs `VACUUM (ANALYZE, SKIP_LOCKED)` on the store's tables each time the rows this store changed since the
 * last one reach the tables' size then (at least {@link MIN_CHANGES_BEFORE_UPKEEP}): a handful of runs while the
 * tables grow, none once they pass {@link MAX_ROWS_FOR_UPKEEP}. One run at a time, in the background. A table
 * another session is vacuuming is skipped; a run that fails (a lost connection; a role that does not own the
 * tables, which PostgreSQL skips with a warning) leaves the tables to autovacuum until the next threshold.
 */
export class TableUpkeep {
  private changedSinceUpkeep = 0;
  private threshold: number;
  private running: Promise<void> | undefined;
  private closed = false;

  /**
   * `tables` are the qualified names to keep; `rowsNow` answers how many rows they hold by the planner's estimate
   * (0 for tables never analyzed); `rowsAtOpen` is that estimate when the store opened.
   */
  constructor(
    private readonly run: RunCommand,
    private readonly tables: readonly string[],
    private readonly rowsNow: () => Promise<number>,
    rowsAtOpen: number,
  ) {
    this.threshold = thresholdFor(rowsAtOpen);
  }

  /** A group committed having changed `rows` rows of the store's tables. */
  changed(rows: number): void {
    if (this.closed || rows <= 0) return;
    this.changedSinceUpkeep += rows;
    if (this.running !== undefined || this.changedSinceUpkeep < this.threshold) return;
    this.changedSinceUpkeep = 0;
    this.running = this.keep().finally(() => (this.running = undefined));
  }

  private async keep(): Promise<void> {
    try {
      await this.run(`VACUUM (ANALYZE, SKIP_LOCKED) ${this.tables.join(', ')}`);
      this.threshold = thresholdFor(await this.rowsNow());
    } catch {
      // Best effort by design (see the class comment): autovacuum still keeps the tables on its own schedule.
    }
  }

  /** Waits for a run under way; later changes start none. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}

/** Changes before the next run for tables of `rows` rows: their size, or never once they are large. */
function thresholdFor(rows: number): number {
  return rows > MAX_ROWS_FOR_UPKEEP ? Infinity : Math.max(MIN_CHANGES_BEFORE_UPKEEP, rows);
}

/** The planner's row estimate of `tables` (qualified names), as `pg_class` holds it; -1 (never analyzed) counts 0. */
export const rowEstimateSql = (tables: readonly string[]): string =>
  `SELECT COALESCE(SUM(GREATEST(reltuples, 0)), 0)::float8 AS rows FROM pg_class WHERE oid IN (${tables
    .map((table) => `'${table.replaceAll("'", "''")}'::regclass`)
    .join(', ')})`;
