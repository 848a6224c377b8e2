import type pg from 'pg';
import { optionalDriver } from '../optional-driver.js';

/** node-postgres's module: how the PostgreSQL store makes its pool. */
export type PostgresDriver = typeof pg;

/** The package the PostgreSQL store runs on; an optional peer dependency, so only users of PostgreSQL install it. */
export const POSTGRES_DRIVER_PACKAGE = 'pg';

/** Loads node-postgres on first use (see {@link optionalDriver}). */
export const loadPostgresDriver: () => Promise<PostgresDriver> = optionalDriver<PostgresDriver>(
  POSTGRES_DRIVER_PACKAGE,
  () => import('pg'),
);
