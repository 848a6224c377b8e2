import type pg from 'pg';
import type { PostgresDriver } from './driver.js';
import { quoteSchema } from './postgres-schema.js';
import type { AnalyzedTable } from './planner-statistics.js';
import { RECORD_COLUMNS } from '../record-columns.js';

/** int8 (bigint) columns as numbers: sequences and positions stay far below 2^53. */
const INT8_OID = 20;

/** The tables (and columns) the store analyzes while they are young (see {@link PlannerStatistics}). */
export const storeTables = (schema: string): AnalyzedTable[] => [
  { name: `${quoteSchema(schema)}.records`, columns: ['kind', 'id', 'version', 'terminal', ...RECORD_COLUMNS] },
  { name: `${quoteSchema(schema)}.log`, columns: ['position', 'stream', 'sequence'] },
];

export function makePool(driver: PostgresDriver, url: string, max: number, applicationName: string): pg.Pool {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID && format !== 'binary'
        ? Number
        : driver.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
  };
  const pool = new driver.Pool({ connectionString: url, max, types, application_name: applicationName });
  // An idle connection the server dropped (a restart, say) is removed by the pool; without a listener the
  // error would end the process.
  pool.on('error', () => undefined);
  return pool;
}
