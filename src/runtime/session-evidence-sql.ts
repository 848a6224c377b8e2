// The statements on a PostgreSQL store's `session_evidence` table, shared by the engine's runtime and the
// session supervisors it starts (which load only this module and pg).

/** Schema names the PostgreSQL store accepts; checked again here so a table name is never in doubt. */
export function evidenceTable(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`${JSON.stringify(schema)} is not a store schema name`);
  return `"${schema}".session_evidence`;
}

/**
 * The table beside the store's records, created once (by the first engine to start this runtime), and the row
 * naming its evidence root. One row per session id: its start claim (`started`) or the fence that forbids it
 * (`fenced`) — whichever INSERT lands first wins, and the key never changes hands after.
 */
export const createEvidenceTables = (schema: string): string => `
  CREATE TABLE IF NOT EXISTS ${evidenceTable(schema)} (
    session_id text COLLATE "C" PRIMARY KEY,
    session_key text NOT NULL,
    attempt_id text,
    claim text NOT NULL CHECK (claim IN ('started', 'fenced')),
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    host text,
    pid integer,
    heartbeat_at timestamptz,
    cancel_requested_at timestamptz,
    exit_code integer,
    exited_at timestamptz,
    output bytea,
    output_bytes bigint,
    output_truncated boolean,
    output_digest text);
  CREATE TABLE IF NOT EXISTS "${schema}".session_evidence_root (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), id text NOT NULL);`;

/** The supervisor's start claim: a row comes back only when this claim won. */
export const claimStart = (schema: string): string =>
  `INSERT INTO ${evidenceTable(schema)} (session_id, session_key, attempt_id, claim, host, pid, heartbeat_at) ` +
  "VALUES ($1, $2, $3, 'started', $4, $5, clock_timestamp()) ON CONFLICT (session_id) DO NOTHING RETURNING 1";

/** A fence: the same INSERT as a claim, so a fenced key never starts anywhere. */
export const fenceStart = (schema: string): string =>
  `INSERT INTO ${evidenceTable(schema)} (session_id, session_key, claim) VALUES ($1, $2, 'fenced') ` +
  'ON CONFLICT (session_id) DO NOTHING RETURNING 1';

/** The supervisor's heartbeat; answers whether a cancellation was requested. */
export const heartbeat = (schema: string): string =>
  `UPDATE ${evidenceTable(schema)} SET heartbeat_at = clock_timestamp() WHERE session_id = $1 ` +
  "AND claim = 'started' RETURNING cancel_requested_at IS NOT NULL AS cancel";

/** The command's end, recorded once. */
export const recordExit = (schema: string): string =>
  `UPDATE ${evidenceTable(schema)} SET exit_code = $2, exited_at = clock_timestamp(), ` +
  'heartbeat_at = clock_timestamp(), output = $3, output_bytes = $4, output_truncated = $5, output_digest = $6 ' +
  "WHERE session_id = $1 AND claim = 'started' AND exit_code IS NULL";
