import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { createEvidenceTables, evidenceTable, fenceStart } from './session-evidence-sql.js';

/** What the row of one session says, with its heartbeat's age by the database's clock. */
export interface SessionRow {
  claim: 'started' | 'fenced';
  claimedAt: string;
  host: string | null;
  pid: number | null;
  /** Milliseconds since the supervisor's last heartbeat, by the database's clock; null for a fence. */
  heartbeatAgeMs: number | null;
  exitCode: number | null;
  cancelRequested: boolean;
  outputDigest: string | null;
  outputTruncated: boolean | null;
}

/** Second key of the advisory lock under which the first engine creates the tables ("cova" is the first). */
const CREATE_LOCK = 0x65766964;

/**
 * Session evidence kept in a PostgreSQL store's own database (table `<schema>.session_evidence`), so every engine
 * of the store reads it whatever its host or folder. The engine side: fences, reads, cancel requests, output;
 * the start claims, heartbeats and exits are written by the session supervisors (session-supervisor.ts).
 *
 * @example
 * ```ts
 * const evidence = await PostgresSessionEvidence.open('postgres://coven@db/automations');
 * const row = await evidence.read('cp-0123456789abcdef01234567');
 * ```
 */
export class PostgresSessionEvidence {
  private constructor(
    /** The connection string the supervisors are given on stdin (never in a command's environment). */
    readonly url: string,
    readonly schema: string,
    private readonly pool: pg.Pool,
    /** `store:<schema>#<id>`: the id is a row made once, so it names this database's table, not an address. */
    readonly root: string,
  ) {}

  static async open(url: string, schema = 'coven'): Promise<PostgresSessionEvidence> {
    const table = evidenceTable(schema);
    // Loaded here, not at import: node-postgres is an optional peer dependency, present wherever a store is on it.
    const { default: driver } = await import('pg');
    const pool = new driver.Pool({ connectionString: url, max: 4, application_name: 'coven evidence' });
    pool.on('error', () => undefined);
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2) # $3)', [0x636f7661, schema, CREATE_LOCK]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await client.query(createEvidenceTables(schema));
        await client.query(
          `INSERT INTO "${schema}".session_evidence_root (id) VALUES ($1) ON CONFLICT (singleton) DO NOTHING`,
          [randomBytes(16).toString('hex')],
        );
        const { rows } = await client.query<{ id: string }>(`SELECT id FROM "${schema}".session_evidence_root`);
        await client.query('COMMIT');
        return new PostgresSessionEvidence(url, schema, pool, `store:${schema}#${rows[0]!.id}`);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end();
      throw new Error(`session evidence in ${table}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Fences `sessionId`: true when the fence won (no claim existed, and none can ever be made now). */
  async fence(sessionId: string, sessionKey: string): Promise<boolean> {
    return (await this.pool.query(fenceStart(this.schema), [sessionId, sessionKey])).rowCount === 1;
  }

  async read(sessionId: string): Promise<SessionRow | undefined> {
    const { rows } = await this.pool.query<SessionRow>(
      'SELECT claim, claimed_at::text AS "claimedAt", host, pid, ' +
        '(EXTRACT(EPOCH FROM clock_timestamp() - heartbeat_at) * 1000)::float8 AS "heartbeatAgeMs", ' +
        'exit_code AS "exitCode", cancel_requested_at IS NOT NULL AS "cancelRequested", ' +
        'output_digest AS "outputDigest", output_truncated AS "outputTruncated" ' +
        `FROM ${evidenceTable(this.schema)} WHERE session_id = $1`,
      [sessionId],
    );
    return rows[0];
  }

  /** Records a cancel request on a started session (its supervisor acts on it at its next heartbeat). */
  async requestCancel(sessionId: string): Promise<void> {
    await this.pool.query(
      `UPDATE ${evidenceTable(this.schema)} SET cancel_requested_at = COALESCE(cancel_requested_at, ` +
        "clock_timestamp()) WHERE session_id = $1 AND claim = 'started'",
      [sessionId],
    );
  }

  /** The output of an ended session, when it was kept whole (output past the cap is digested, not kept). */
  async output(sessionId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ output: Buffer | null; truncated: boolean | null }>(
      `SELECT output, output_truncated AS truncated FROM ${evidenceTable(this.schema)} ` +
        'WHERE session_id = $1 AND exit_code IS NOT NULL',
      [sessionId],
    );
    const row = rows[0];
    return row === undefined || row.output === null || row.truncated === true ? undefined : row.output.toString('utf8');
  }

  /**
   * Drops a session's kept output; the row stays, since its claim (or fence) is what keeps the key from ever
   * starting again, and so do the digest and the exit code.
   */
  async dropOutput(sessionId: string): Promise<void> {
    await this.pool.query(`UPDATE ${evidenceTable(this.schema)} SET output = NULL WHERE session_id = $1`, [sessionId]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
