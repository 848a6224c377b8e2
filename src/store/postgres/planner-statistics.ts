/** Rows changed before a store analyzes its tables the first time, however small they are. */
export const MIN_CHANGES_BEFORE_ANALYZE = 1_000;
/**
 * Tables larger than this (rows, by the planner's estimate) are left to autovacuum alone: by then every plan of
 * the store's has the shape it keeps as the tables grow on (index scans and nested loops).
 */
export const MAX_ROWS_FOR_ANALYZE = 20_000;
/**
 * The statistics target of the store's own analyses: a sample of 3,000 rows (the default's 30,000 took about
 * 200 ms of a burst's server time per run), enough for the row counts and the few common values plans turn on.
 * Autovacuum's later analyses replace these statistics with full ones.
 */
const STATISTICS_TARGET = 10;

/** A table and the columns whose statistics plans depend on (its wide JSON left out: no plan reads it). */
export interface AnalyzedTable {
  readonly name: string;
  readonly columns: readonly string[];
}

/** Runs one SQL command outside any transaction (on a pooled connection). */
type RunCommand = (sql: string) => Promise<unknown>;

/**
 * Keeps the planner's statistics of a young store's tables up with the store's own growth.
 *
 * Why: the store's statements run on generic plans (postgres-store.ts), and a connection plans each once, against
 * the statistics of that moment. A new store's first plans see nearly empty tables and pick sequential scans,
 * hash joins and whichever index is at hand, choices that stay cheap only while the tables are small: a run-now's
 * prefetch on such a plan cost 0.4–0.8 ms of server time instead of 0.08 ms once the tables held a few thousand
 * rows. PostgreSQL plans again after an ANALYZE of a table a plan reads, and autovacuum analyzes only after 10 % of
 * a table changed and at most once a minute, so a young store would run on its first plans for its first minutes.
 *
 * This runs `ANALYZE (SKIP_LOCKED)` on the store's tables each time the rows this store changed since the last run
 * reach the tables' size then (at least {@link MIN_CHANGES_BEFORE_ANALYZE}): a handful of runs while the tables
 * grow, none once they pass {@link MAX_ROWS_FOR_ANALYZE}. Only the columns plans read are analyzed, from a small
 * sample, one run at a time, in the background. (A VACUUM as well cleared the dead row versions the passes'
 * bitmap scans visit, but cost a burst more server time in index scans than it saved.) A table another session is
 * analyzing is skipped; a run that fails (a lost connection; a role that does not own the tables, which
 * PostgreSQL skips with a warning) leaves the statistics to autovacuum until the next threshold.
 */
export class PlannerStatistics {
  private changedSinceAnalyze = 0;
  private threshold: number;
  private running: Promise<void> | undefined;
  private closed = false;

  /**
   * `rowsNow` answers how many rows `tables` hold by the planner's estimate (0 for tables never analyzed);
   * `rowsAtOpen` is that estimate when the store opened.
   */
  constructor(
    private readonly run: RunCommand,
    private readonly tables: readonly AnalyzedTable[],
    private readonly rowsNow: () => Promise<number>,
    rowsAtOpen: number,
  ) {
    this.threshold = thresholdFor(rowsAtOpen);
  }

  /** A group committed having changed `rows` rows of the store's tables. */
  changed(rows: number): void {
    if (this.closed || rows <= 0) return;
    this.changedSinceAnalyze += rows;
    if (this.running !== undefined || this.changedSinceAnalyze < this.threshold) return;
    this.changedSinceAnalyze = 0;
    this.running = this.analyze().finally(() => (this.running = undefined));
  }

  private async analyze(): Promise<void> {
    try {
      const tables = this.tables.map(({ name, columns }) => `${name} (${columns.join(', ')})`);
      await this.run(
        `BEGIN; SET LOCAL default_statistics_target = ${STATISTICS_TARGET}; ` +
          `ANALYZE (SKIP_LOCKED) ${tables.join(', ')}; COMMIT`,
      );
      this.threshold = thresholdFor(await this.rowsNow());
    } catch {
      // Best effort by design (see the class comment): autovacuum still analyzes on its own schedule.
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
  return rows > MAX_ROWS_FOR_ANALYZE ? Infinity : Math.max(MIN_CHANGES_BEFORE_ANALYZE, rows);
}

/** The planner's row estimate of `tables`, as `pg_class` holds it; -1 (never analyzed) counts 0. */
export const rowEstimateSql = (tables: readonly AnalyzedTable[]): string =>
  `SELECT COALESCE(SUM(GREATEST(reltuples, 0)), 0)::float8 AS rows FROM pg_class WHERE oid IN (${tables
    .map(({ name }) => `'${name.replaceAll("'", "''")}'::regclass`)
    .join(', ')})`;
