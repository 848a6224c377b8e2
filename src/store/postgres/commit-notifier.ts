import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { PostgresDriver } from './driver.js';
import type { Connection } from './connection.js';

/** How often the fallback poll reads the feed's position while the notification connection is down. */
export const DEFAULT_POLL_MS = 1000;
/** The first reconnect waits this long; each failure doubles it up to {@link MAX_RECONNECT_MS}. */
const FIRST_RECONNECT_MS = 250;
const MAX_RECONNECT_MS = 10_000;

/** The notification channel of one store schema: every store on it hears every other store's commits. */
export const commitChannel = (schema: string): string => `coven_commit_${schema}`;

/**
 * What follows the origin in the payload of a commit that was routine: its writer carries on itself, so the other
 * engines need not look at once. A payload without it (an older build's, or a folded commit that was not routine)
 * wakes them as any commit does.
 */
const ROUTINE_SUFFIX = ':routine';

/** What a store tells the notifier about itself. */
export interface CommitNotifierPorts {
  readonly driver: PostgresDriver;
  readonly url: string;
  readonly schema: string;
  readonly pollMs: number;
  readonly applicationName: string;
  /** The feed's newest position as the database has it now (the poll compares it with the last one seen). */
  readonly feedPosition: () => Promise<number>;
  /** Another store committed (`routine`: only routine work, see `StoreTransaction.routine`): wake the listeners. */
  readonly outsideCommit: (routine: boolean) => void;
}

/**
 * Carries commits between processes sharing one PostgreSQL store: each write group that changed something
 * announces it with `NOTIFY` after it commits (never inside the transaction: the server's notification lock would be
 * held through every group's commit, one group at a time across all engines), and one dedicated connection per store
 * `LISTEN`s and wakes the store's commit listeners for commits made by any other store. Notifications are a
 * latency path, not a correctness one: while the listening connection is down the notifier polls the feed's
 * position every `pollMs` and reconnects with backoff, and it wakes listeners once on every reconnect, since a
 * commit may have gone unheard in between.
 *
 * While it listens, the notifier also sends the store's announcements on that connection, so a group's connection
 * goes straight back to the next group instead of waiting a round trip, and announcements made while one is on the
 * wire are folded into one more sent after it (a notification says "something committed" and whether all of it was
 * routine, not what): every commit is followed by a notification sent after it, however many commits a burst makes.
 *
 * Started lazily by the first commit listener, so a one-shot command opens no extra connection.
 */
export class CommitNotifier {
  /** Tells this store's own notifications from other stores' (its own commits wake its listeners directly). */
  readonly origin = randomBytes(8).toString('hex');
  private client: pg.Client | undefined;
  private started = false;
  private closed = false;
  private reconnectMs = FIRST_RECONNECT_MS;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private lastPosition: number | undefined;
  /** The announcement on the wire on the listening connection, if any. */
  private sending: Promise<void> | undefined;
  /** A commit came after the announcement on the wire was sent: one more is owed. */
  private owed = false;
  /** Whether every commit folded into the owed announcement was routine. */
  private owedRoutine = true;

  constructor(private readonly ports: CommitNotifierPorts) {}

  /**
   * Tells the other stores that this store committed (called after the commit, outside any transaction). While
   * the notifier listens it returns at once and sends on its own connection; otherwise it sends on `db`.
   */
  async announce(db: Connection, routine = false): Promise<void> {
    if (this.client === undefined || this.closed) {
      await db.run('SELECT pg_notify($1, $2)', [commitChannel(this.ports.schema), this.payload(routine)]);
      return;
    }
    this.owedRoutine &&= routine;
    if (this.sending !== undefined) {
      this.owed = true;
      return;
    }
    this.sending = this.sendWhileOwed(this.client);
  }

  private payload(routine: boolean): string {
    return routine ? this.origin + ROUTINE_SUFFIX : this.origin;
  }

  /**
   * Sends one notification, then one more for as long as commits arrived while the last was on the wire. The first
   * waits for the next turn of the event loop: the job whose commit this announces continues first (sending is a
   * socket write, on a run-now's path twice), and commits made meanwhile are folded into it.
   */
  private async sendWhileOwed(client: pg.Client): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      do {
        const payload = this.payload(this.owedRoutine);
        this.owed = false;
        this.owedRoutine = true;
        // A failure here is the connection's: its error handler starts polling and reconnecting; the peers then
        // hear this commit at their poll or maximum sleep, as after a crash.
        await client.query('SELECT pg_notify($1, $2)', [commitChannel(this.ports.schema), payload]);
      } while (this.owed && this.client === client);
    } catch {
      this.owed = false;
      this.owedRoutine = true;
    } finally {
      this.sending = undefined;
    }
  }

  /** Starts listening (once); later calls do nothing. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    void this.connect();
  }

  /** Whether notifications currently arrive (false: the poll stands in). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new this.ports.driver.Client({
      connectionString: this.ports.url,
      application_name: `${this.ports.applicationName} listener`,
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', ({ payload = '' }) => {
      const routine = payload.endsWith(ROUTINE_SUFFIX);
      if ((routine ? payload.slice(0, -ROUTINE_SUFFIX.length) : payload) !== this.origin)
        this.ports.outsideCommit(routine);
    });
    try {
      await client.connect();
      // Its transactions only announce: a notifying transaction is given a transaction id, so with synchronous
      // commit each announcement waited for a WAL flush of its own. A notification is a hint whose loss costs a poll.
      await client.query(`SET synchronous_commit TO off; LISTEN ${commitChannel(this.ports.schema)}`);
    } catch {
      this.lost(client);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reconnectMs = FIRST_RECONNECT_MS;
    this.stopPolling();
    // Commits made while no connection listened were not heard: let listeners look once.
    this.ports.outsideCommit(false);
  }

  /** The listening connection failed or ended: poll until a new one listens. */
  private lost(client: pg.Client): void {
    if (this.client === client) this.client = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => undefined);
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.startPolling();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, this.reconnectMs);
    this.reconnectTimer.unref();
    this.reconnectMs = Math.min(this.reconnectMs * 2, MAX_RECONNECT_MS);
  }

  private startPolling(): void {
    if (this.pollTimer !== undefined) return;
    this.pollTimer = setInterval(() => void this.poll(), this.ports.pollMs);
    this.pollTimer.unref();
  }

  private stopPolling(): void {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }

  private async poll(): Promise<void> {
    let position: number;
    try {
      position = await this.ports.feedPosition();
    } catch {
      return;
    }
    const moved = this.lastPosition !== undefined && position !== this.lastPosition;
    this.lastPosition = position;
    if (moved) this.ports.outsideCommit(false);
  }

  async close(): Promise<void> {
    // The store's last commits are announced before the connection goes.
    await this.sending;
    this.closed = true;
    this.stopPolling();
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
