import type pg from 'pg';
import { ContractError } from '../../contract/errors.js';

/**
 * Feed positions a single database transaction may take. A position is its transaction's id scaled by this
 * and offset by the entry's index in that transaction, so positions sort as transaction ids do.
 */
export const SLOTS_PER_TRANSACTION = 65_536;

/**
 * Where a store's feed positions start: the transaction id (`xid8`) of the migration that introduced them and the
 * position after the last entry an earlier schema wrote. Fixed for the store's life.
 */
export interface FeedClock {
  readonly baseXid: bigint;
  readonly origin: bigint;
}

/**
 * Version 4: feed positions come from transaction ids instead of a sequence advanced under one store-wide lock.
 * Existing entries keep their positions; the first new one is past them all. The sequence goes: nothing takes
 * from it any more.
 */
export const FEED_HORIZON_MIGRATION = {
  version: 4,
  sql: (s: string) => `
    CREATE TABLE ${s}.feed_clock (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      base_xid bigint NOT NULL, origin bigint NOT NULL);
    INSERT INTO ${s}.feed_clock (base_xid, origin)
      SELECT pg_current_xact_id()::text::bigint, COALESCE(MAX(position) + 1, 0) FROM ${s}.log;
    DROP SEQUENCE IF EXISTS ${s}.log_position;`,
};

/** Reads a store's feed clock (the row the migration wrote). */
export async function readFeedClock(client: pg.ClientBase, schema: string): Promise<FeedClock> {
  const { rows } = await client.query<{ base_xid: string; origin: string }>(
    `SELECT base_xid::text AS base_xid, origin::text AS origin FROM ${schema}.feed_clock`,
  );
  return { baseXid: BigInt(rows[0]!.base_xid), origin: BigInt(rows[0]!.origin) };
}

/** The first position transaction `xid` may take (its own range ends {@link SLOTS_PER_TRANSACTION} later). */
export function firstPositionOf(clock: FeedClock, xid: bigint): bigint {
  return clock.origin + (xid - clock.baseXid) * BigInt(SLOTS_PER_TRANSACTION);
}

/** The transaction id whose range of positions begins at `first` (see {@link firstPositionOf}). */
export function xidOf(clock: FeedClock, first: bigint): bigint {
  return clock.baseXid + (first - clock.origin) / BigInt(SLOTS_PER_TRANSACTION);
}

/**
 * The SQL expression for the feed's visibility horizon in the statement's snapshot, with the clock's base xid and
 * origin as parameters `$base` and `$origin`: the first position of the oldest transaction that may still commit.
 * Every position below it belongs to a transaction that has ended, so an entry that commits later can never land
 * below an entry a reader was already given.
 */
export const horizonSql = (base: string, origin: string): string =>
  `(${origin}::bigint + (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - ${base}::bigint) ` +
  `* ${SLOTS_PER_TRANSACTION})`;

/**
 * A database transaction appended more feed entries than it has positions for, or the store's positions
 * outgrew what a JavaScript number holds exactly. The job was rolled back; nothing of it was written.
 */
export class FeedCapacityError extends ContractError {
  constructor(location: string, reason: string) {
    super('INTERNAL', `PostgreSQL store ${location}: ${reason}; the transaction was rolled back`, {
      location,
      reason,
    });
    this.name = 'FeedCapacityError';
  }
}

/** The position for slot `slot` of the transaction whose first position is `first`, checked against both limits. */
export function positionAt(location: string, first: bigint, slot: number): number {
  if (slot >= SLOTS_PER_TRANSACTION)
    throw new FeedCapacityError(
      location,
      `one transaction may append at most ${SLOTS_PER_TRANSACTION} feed entries ` +
        '(split the work into smaller transactions)',
    );
  const position = first + BigInt(slot);
  if (position > BigInt(Number.MAX_SAFE_INTEGER))
    throw new FeedCapacityError(location, `feed position ${position} is past ${Number.MAX_SAFE_INTEGER}`);
  return Number(position);
}
