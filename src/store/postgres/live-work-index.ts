import type pg from 'pg';

/**
 * The occurrence states that hold an automation's live work (the engine's `OCCURRENCE_LIVE`): claimed through
 * recovery_required. Written out, not imported: a migration's text must not change when code does.
 */
export const LIVE_WORK_STATES = ['claimed', 'dispatching', 'running', 'recovering', 'recovery_required'] as const;

/** Which records hold live work: the index's predicate. */
const LIVE_WORK =
  `kind = 'occurrence' AND (data->'snapshot'->>'value') IN ` +
  `(${LIVE_WORK_STATES.map((state) => `'${state}'`).join(', ')})`;

/** The index's name, as a refused write's error names it. */
export const LIVE_WORK_INDEX = 'one_live_occurrence_per_automation';

/**
 * overlap: forbid, kept by the database. A claim checks the automation's other occurrences and then writes only
 * its own; two engines each reading the other's occurrence before it was claimed would both claim (a write skew
 * snapshot isolation lets through). Locking the automation's row in the claim would not stop it: a group's
 * snapshot is taken before the lock, and a row only locked (not changed) raises no serialization failure, so the
 * second claimer would still decide from what it read before the first committed. This index is checked against
 * the newest committed and in-flight entries, whatever the snapshot: a second occurrence of one automation
 * entering a live state waits for the first's transaction and is refused once it commits (unique_violation,
 * which the store reports as a lost race: the claim rolls back whole and is decided again on the new state).
 * SKIP LOCKED does not bypass it (that skips rows, and the two claims lock different occurrences). It costs one
 * index entry per write of a live occurrence, and claims of different automations never meet in it.
 */
export const LIVE_WORK_MIGRATION = {
  version: 3,
  sql: (s: string) =>
    `CREATE UNIQUE INDEX ${LIVE_WORK_INDEX} ON ${s}.records ((data->'snapshot'->'context'->>'automationId')) ` +
    `WHERE ${LIVE_WORK};`,
  /**
   * Why a store cannot take the index: automations that already have two live occurrences (written by an engine
   * before this rule). Building the index would fail on them; the store is refused untouched instead, naming them.
   */
  refusal: async (client: pg.ClientBase, s: string): Promise<string | undefined> => {
    const { rows } = await client.query<{ automation: string; occurrences: string[] }>(
      `SELECT data->'snapshot'->'context'->>'automationId' AS automation, array_agg(id ORDER BY id) AS occurrences ` +
        `FROM ${s}.records WHERE ${LIVE_WORK} GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 5`,
    );
    if (rows.length === 0) return undefined;
    const named = rows.map((r) => `${r.automation} (${r.occurrences.join(', ')})`).join('; ');
    return (
      `automations with more than one live occurrence: ${named}; this version keeps one live occurrence per ` +
      'automation in the database, so settle the others (cancel them, or let them finish) with the version that ' +
      'wrote them, then open the store again'
    );
  },
};
