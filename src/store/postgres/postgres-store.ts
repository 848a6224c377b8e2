import type pg from 'pg';
import { ContractError } from '../../contract/errors.js';
import { CommitQueue, type QueuedTransaction } from '../commit-queue.js';
import { loadPostgresDriver, type PostgresDriver } from './driver.js';
import { asStoreError, isConnectionFailure, redactUrl, StoreUnavailableError } from './postgres-errors.js';
import { prepareSchema, quoteSchema } from './postgres-schema.js';
import { Connection } from './connection.js';
import { PostgresReader, PostgresTransaction } from './postgres-transaction.js';
import { readFeedClock, type FeedClock } from './feed-clock.js';
import { OwnCommits, StaleOwnCommits } from './own-commits.js';
import { CommitNotifier, DEFAULT_POLL_MS } from './commit-notifier.js';
import { PlannerStatistics, rowEstimateSql } from './planner-statistics.js';
import { makePool, storeTables } from './pool.js';
import {
  CommitListeners,
  StoreClosedError,
  type CommitListener,
  type Store,
  type StoreReader,
  type StoreTransaction,
} from '../store.js';

export interface PostgresStoreOptions {
  /** The schema (namespace) the store's tables live in; several stores may share a database. Default `coven`. */
  schema?: string;
  /** Most queued transactions folded into one database transaction (default 256). */
  maxGroupSize?: number;
  /** Connections in the pool, shared by the groups being written and the reads (default 8). */
  poolSize?: number;
  /**
   * Groups of queued transactions written at once, each on a connection of its own (default 1: one group at a
   * time, bodies in order; at most `poolSize` − 1, so a read always finds a connection).
   */
  parallelGroups?: number;
  /**
   * How often to look for other stores' commits while the `LISTEN` connection is down (default 1000 ms); with
   * it up, other processes' commits wake this store's commit listeners as they are notified.
   */
  pollMs?: number;
  /**
   * How the store's sessions name themselves in `pg_stat_activity` (default `coven-automata`; the listening
   * session adds ` listener`): lets an operator tell one engine's connections from another's.
   */
  applicationName?: string;
}

const MAX_GROUP = 256;
const POOL_SIZE = 8;
/**
 * Groups in flight by default: one, bodies in order. More keep the engine busy while the server answers (an
 * in-process burst of 1,000 run-nows: 16.6 s at one, 10.4–11.1 s at four), but cost CPU in more, smaller commits
 * and in the peer bench ran slower than one at its best (bench/README.md, session 24).
 */
const PARALLEL_GROUPS = 1;
/** Groups in flight for the options given: at least one, and one connection fewer than the pool has. */
function parallelGroupsOf(given: number | undefined, poolSize: number): number {
  if (given !== undefined && (!Number.isInteger(given) || given < 1))
    throw new ContractError('VALIDATION_FAILED', 'parallelGroups must be a positive integer', {
      field: 'parallelGroups',
    });
  return Math.max(1, Math.min(given ?? PARALLEL_GROUPS, poolSize - 1));
}

// Snapshot isolation, not SERIALIZABLE: SERIALIZABLE's predicate locks are page-grained on small indexes, so two
// stores appending to different streams aborted each other (the feed-order contention test). What a group writes
// is guarded row by row instead (see the class comment).
// Generic plans for the store's own transactions: each statement is a named one whose shape never changes, and with
// custom plans (the server's choice for array parameters, whose custom estimates always look cheaper) every
// execution was planned again; a job's one-statement write cost more to plan than to run. SET LOCAL: the setting
// ends with the transaction and travels in BEGIN's message, no round trip of its own.
const GENERIC_PLANS = 'SET LOCAL plan_cache_mode = force_generic_plan';
const BEGIN = `BEGIN ISOLATION LEVEL REPEATABLE READ; ${GENERIC_PLANS}`;
const BEGIN_READ = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ${GENERIC_PLANS}`;

/**
 * The Store port on PostgreSQL (node-postgres, pooled). Each group of queued transactions is one REPEATABLE
 * READ database transaction (one snapshot) with a savepoint per transaction, so each still commits or rolls
 * back alone and many share one commit. By default one group is written at a time, bodies in order; with
 * `parallelGroups` above 1 several are, each on its own connection: bodies of different groups may interleave,
 * and one group's write to a row another group of this store committed after its snapshot is refused as another
 * store's would be (below). A body that must see another's writes waits for that body's commit, as it must with
 * any store. Compare-and-set is a conditional UPDATE (or an INSERT … ON CONFLICT DO NOTHING); terminal records are
 * sealed by the same condition; per-stream sequences are gapless under UNIQUE (stream, sequence), the head read
 * from the snapshot.
 *
 * Feed positions never appear out of order to a reader, and no lock orders them: a group's positions are its
 * transaction id's range (feed-clock.ts), and readers serve only positions below the horizon of the oldest
 * transaction that may still commit. Groups of every store append at once; the price is that one long open
 * transaction anywhere in the cluster holds every feed reader back until it ends. Positions have gaps.
 *
 * Several stores (processes) may write one database at once. A group that writes a row (or a stream's next
 * entry) another store committed after its snapshot fails with {@link StoreConflictError}, nothing written.
 * Records a body only reads are not guarded across stores (snapshot isolation, not serializability): a
 * decision that must hold against other stores' writes must write (compare-and-set) what it depends on, or rest
 * on a unique index, as overlap: forbid does (see live-work-index.ts).
 *
 * @example
 * ```ts
 * const store = await PostgresStore.open('postgres://coven@db.internal/automations');
 * const engine = createEngine({ store, runtimes: [runtime] });
 * ```
 */
export class PostgresStore implements Store {
  readonly sharedByEngines = true;
  private readonly committed = new CommitListeners();
  private readonly queue: CommitQueue;
  private readonly notifier: CommitNotifier;
  private readonly statistics: PlannerStatistics;
  /** What this store committed and read last: what a launch's answer reads (see PrefetchOptions.recentCommits). */
  private readonly own = new OwnCommits();

  private constructor(
    /** The connection string without its password: how messages name this store. */
    readonly file: string,
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly feed: FeedClock,
    groups: { maxGroup: number; parallel: number },
    listen: { driver: PostgresDriver; url: string; pollMs: number; applicationName: string },
    rowsAtOpen: number,
  ) {
    const tables = storeTables(schema);
    this.statistics = new PlannerStatistics(
      (sql) => pool.query(sql),
      tables,
      async () => (await pool.query<{ rows: number }>(rowEstimateSql(tables))).rows[0]!.rows,
      rowsAtOpen,
    );
    this.queue = new CommitQueue(groups.maxGroup, (batch) => this.writeBatch(batch), groups.parallel);
    this.notifier = new CommitNotifier({
      ...listen,
      schema,
      feedPosition: () => this.feedPosition(),
      outsideCommit: (routine) => this.committed.notify('outside', routine),
    });
  }

  /**
   * Connects to the database at `url` and creates the store's schema there, migrates an older one, or checks
   * a current one. A foreign or newer schema is refused untouched with {@link PostgresSchemaError}; an
   * unreachable database with {@link StoreUnavailableError}; a missing `pg` package with
   * {@link StoreDriverMissingError}.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const driver = await loadPostgresDriver();
    const schema = options.schema ?? 'coven';
    quoteSchema(schema);
    const location = redactUrl(url);
    const applicationName = options.applicationName ?? 'coven-automata';
    const poolSize = options.poolSize ?? POOL_SIZE;
    const parallel = parallelGroupsOf(options.parallelGroups, poolSize);
    const pool = makePool(driver, url, poolSize, applicationName);
    try {
      const client = await pool.connect();
      let feed: FeedClock;
      let rowsAtOpen: number;
      try {
        await prepareSchema(client, location, schema);
        feed = await readFeedClock(client, quoteSchema(schema));
        rowsAtOpen = (await client.query<{ rows: number }>(rowEstimateSql(storeTables(schema)))).rows[0]!.rows;
      } finally {
        client.release();
      }
      const groups = { maxGroup: options.maxGroupSize ?? MAX_GROUP, parallel };
      return new PostgresStore(
        location,
        pool,
        schema,
        feed,
        groups,
        {
          driver,
          url,
          pollMs: options.pollMs ?? DEFAULT_POLL_MS,
          applicationName,
        },
        rowsAtOpen,
      );
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw asStoreError(location, error);
    }
  }

  /**
   * Removes a store's schema and everything in it, for scratch stores (a test world's, say). Irreversible: the
   * store's records and history are gone; stores still open on it fail their next transaction.
   */
  static async dropSchema(url: string, schema: string): Promise<void> {
    const driver = await loadPostgresDriver();
    const client = new driver.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${quoteSchema(schema)} CASCADE`);
    } finally {
      await client.end();
    }
  }

  transact<R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> {
    return this.queue.enqueue(body);
  }

  private async writeBatch(batch: QueuedTransaction[]): Promise<void> {
    let lease: Lease;
    try {
      lease = await this.checkout();
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    }
    let broken: unknown;
    try {
      broken = await this.writeOn(lease.client, batch);
    } finally {
      lease.release(broken);
    }
  }

  /**
   * A pooled connection for one group or read. While it is out, a connection the server ends (a restart, an
   * administrator's pg_terminate_backend) raises an error event on it: recorded here, or the process would end
   * on an unhandled 'error'. A broken connection is destroyed on release, not pooled again.
   */
  private async checkout(): Promise<Lease> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreUnavailableError(this.file, error);
    }
    let lost: unknown;
    const onError = (error: unknown) => (lost ??= error);
    client.on('error', onError);
    return {
      client,
      release: (broken) => {
        client.removeListener('error', onError);
        const failure = broken ?? lost;
        client.release(failure === undefined ? undefined : (failure as Error));
      },
    };
  }

  /** Writes one group on `client`; returns the connection failure that makes the client unfit for reuse. */
  private async writeOn(client: pg.PoolClient, batch: QueuedTransaction[]): Promise<unknown> {
    const db = this.connection(client);
    // One job alone needs no savepoint: its rollback is the transaction's.
    const savepoints = batch.length > 1;
    let tx = new PostgresTransaction(db, this.own, !savepoints);
    const done: Array<[QueuedTransaction, unknown]> = [];
    try {
      // Each job of several runs under the savepoint `job`. Savepoint statements travel with a neighbour (BEGIN, the
      // next job's first statement) in one message, and one a failed job rolled back to still stands for the next.
      // BEGIN itself waits for the group's first statement and, where it can, travels with it.
      db.openLazily(savepoints ? `${BEGIN}; SAVEPOINT job` : BEGIN);
      for (const [i, job] of batch.entries()) {
        let result = await this.runJob(db, tx, job, savepoints);
        if (result === STALE) {
          // It relied on this store's memory of its commits and something moved: again, reading the database.
          await db.end('ROLLBACK');
          db.openLazily(BEGIN);
          tx = new PostgresTransaction(db, this.own, true, false);
          result = await this.runJob(db, tx, job, savepoints, false);
        }
        if (result === undefined || result === STALE) continue;
        done.push([job, result.value]);
        if (savepoints && i < batch.length - 1) db.deferControl('RELEASE job; SAVEPOINT job');
      }
      if (done.length === 0) {
        await db.end('ROLLBACK');
        return undefined;
      }
      await db.end('COMMIT');
    } catch (error) {
      await db.end('ROLLBACK').catch(() => undefined);
      const failure = asStoreError(this.file, error);
      // Every job of the group is answered: those that ran (nothing of them committed) and those the failure
      // kept from running (a lost connection mid-group); a job already refused keeps its own answer.
      for (const job of batch) job.reject(failure);
      const cause = error instanceof JobRolledBack ? error.cause : error;
      return isConnectionFailure(cause) ? cause : undefined;
    }
    tx.rememberCommitted();
    if (tx.wakingWrites > 0) this.committed.notify('local', tx.isRoutine);
    this.statistics.changed(tx.writes);
    for (const [job, result] of done) job.resolve(result);
    if (tx.wakingWrites === 0) return undefined;
    // Sent after COMMIT, never inside the transaction (see CommitNotifier): on the notifier's own connection when it
    // listens, else here. A notification lost to a crash right here costs the peers at most their poll or maximum
    // sleep.
    try {
      await this.notifier.announce(db, tx.isRoutine);
    } catch (error) {
      return isConnectionFailure(error) ? error : undefined;
    }
    return undefined;
  }

  private connection(client: pg.ClientBase): Connection {
    return new Connection(client, quoteSchema(this.schema), this.feed, this.file);
  }

  /** Runs one job of a group; its result, or undefined when it failed (the job was answered and rolled back). */
  private async runJob(
    db: Connection,
    tx: PostgresTransaction,
    job: QueuedTransaction,
    savepoint: boolean,
    mayRunAgain = true,
  ): Promise<{ value: unknown } | typeof STALE | undefined> {
    tx.beginJob();
    try {
      const value = await job.body(tx);
      // A job alone is the group's last: its writes carry the COMMIT (writeOn's then costs nothing).
      if (savepoint) await tx.flush();
      else await tx.flushThenCommit();
      // The database aborted the transaction even though the body carried on: nothing of it may commit.
      if (tx.failure !== undefined) throw tx.failure;
      tx.finishJob();
      return { value };
    } catch (error) {
      if (mayRunAgain && (error instanceof StaleOwnCommits || tx.failure instanceof StaleOwnCommits)) return STALE;
      job.reject(asStoreError(this.file, error));
      if (!savepoint) throw new JobRolledBack(error);
      await db.control('ROLLBACK TO job');
      tx.rollbackJob();
      return undefined;
    }
  }

  async read<R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> {
    if (this.queue.isClosed) throw new StoreClosedError('the store is closed');
    const lease = await this.checkout();
    const db = this.connection(lease.client);
    let broken: unknown;
    try {
      // One snapshot for the whole body: what it reads is one moment's committed state. The BEGIN travels with the
      // body's first statement where it can, and a body that sent none ends without a round trip.
      db.openLazily(BEGIN_READ);
      const result = await body(new PostgresReader(db));
      await db.end('COMMIT');
      return result;
    } catch (error) {
      if (isConnectionFailure(error)) broken = error;
      else await db.end('ROLLBACK').catch(() => undefined);
      throw asStoreError(this.file, error);
    } finally {
      lease.release(broken);
    }
  }

  /** Calls `listener` after every commit of this store, and of every other store on the same schema. */
  onCommit(listener: CommitListener): () => void {
    this.notifier.start();
    return this.committed.add(listener);
  }

  /** Whether other stores' commits arrive as notifications now (false: polled every `pollMs`). */
  get listening(): boolean {
    return this.notifier.listening;
  }

  /** The newest committed feed position (-1 before the first append). */
  private async feedPosition(): Promise<number> {
    const { rows } = await this.pool.query<{ p: number | null }>(
      `SELECT MAX(position) AS p FROM ${quoteSchema(this.schema)}.log`,
    );
    return rows[0]?.p ?? -1;
  }

  async close(): Promise<void> {
    if (this.queue.isClosed) return;
    await this.queue.close();
    await this.notifier.close();
    await this.statistics.close();
    await this.pool.end();
  }
}

/** A job that relied on the store's memory of its own commits met a change: it runs again (see writeOn). */
const STALE = Symbol('stale');

/** A checked-out connection and how to give it back (destroyed when `broken` or when the server ended it). */
interface Lease {
  readonly client: pg.PoolClient;
  release(broken?: unknown): void;
}

/** A single job's failure, already answered: the group's transaction rolls back and nothing else happens. */
class JobRolledBack extends Error {
  constructor(cause: unknown) {
    super('the transaction was rolled back', { cause });
  }
}
