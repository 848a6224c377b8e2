// Schema version 7: the fields the passes and the operator's timelines select on become columns (see
// src/store/record-columns.ts), and the indexes that were built on expressions over the JSON text are rebuilt on
// them, under the same names. The text below is written out, not derived from code: a migration's text must not
// change when code does. Each column's value is the record's string at that path (null for any other JSON value),
// as the writer computes it; the revision is the number as text.

const ENTITY = `kind IN ('occurrence', 'run', 'attempt')`;
const LIVE = `kind IN ('occurrence', 'attempt')`;
const TIMELINE = `kind IN ('occurrence', 'run')`;

/** The record's string at a path (`->` steps, then `->>`), or null. */
const str = (steps: string[], last: string) => {
  const parent = ['data', ...steps.map((s) => `'${s}'`)].join('->');
  return `CASE WHEN json_typeof(${parent}->'${last}') = 'string' THEN ${parent}->>'${last}' END`;
};
const revision = `CASE WHEN json_typeof(data->'attributes'->'automationRevision') IN ('number', 'string')
  THEN data->'attributes'->>'automationRevision' END`;
const state = str(['snapshot'], 'value');
/** An occurrence's slot or a run's start, when the record has all a timeline entry needs. */
const timelineAt = `CASE WHEN kind = 'occurrence' THEN ${str(['attributes'], 'scheduledFor')}
  ELSE ${str(['attributes'], 'startedAt')} END`;
const timelineComplete = `${state} IS NOT NULL AND ${str(['attributes'], 'automationId')} IS NOT NULL`;

const LIVE_STATES = `('claimed', 'dispatching', 'running', 'recovering', 'recovery_required')`;

export const RECORD_COLUMNS_MIGRATION = {
  version: 7,
  sql: (s: string) => `
    ALTER TABLE ${s}.records
      ADD COLUMN state text COLLATE "C", ADD COLUMN automation_id text COLLATE "C",
      ADD COLUMN scheduled_for text COLLATE "C", ADD COLUMN not_before text COLLATE "C",
      ADD COLUMN lease_expires_at text COLLATE "C", ADD COLUMN deadline_at text COLLATE "C",
      ADD COLUMN automation_revision text, ADD COLUMN claimed_by text COLLATE "C",
      ADD COLUMN launched_by text COLLATE "C",
      ADD COLUMN timeline_at text COLLATE "C", ADD COLUMN timeline_automation_id text COLLATE "C";
    UPDATE ${s}.records SET state = ${state} WHERE ${ENTITY};
    UPDATE ${s}.records SET
      automation_id = ${str(['snapshot', 'context'], 'automationId')},
      scheduled_for = ${str(['attributes'], 'scheduledFor')},
      not_before = ${str(['attributes'], 'notBefore')},
      lease_expires_at = ${str(['snapshot', 'context', 'fence'], 'leaseExpiresAt')},
      deadline_at = ${str(['snapshot', 'context'], 'deadlineAt')},
      automation_revision = ${revision},
      claimed_by = ${str(['snapshot', 'context', 'fence'], 'claimedBy')},
      launched_by = ${str(['attributes', 'workerCorrelation'], 'workerId')}
      WHERE ${LIVE};
    UPDATE ${s}.records SET timeline_at = ${timelineAt}, timeline_automation_id = ${str(['attributes'], 'automationId')}
      WHERE ${TIMELINE} AND ${timelineComplete} AND (${timelineAt}) IS NOT NULL;
    DROP INDEX ${s}.one_live_occurrence_per_automation, ${s}.live_work_by_automation, ${s}.claimable_occurrences,
      ${s}.occurrence_timeline, ${s}.occurrence_timeline_by_automation, ${s}.run_timeline,
      ${s}.run_timeline_by_automation;
    CREATE UNIQUE INDEX one_live_occurrence_per_automation ON ${s}.records (automation_id)
      WHERE kind = 'occurrence' AND state IN ${LIVE_STATES};
    CREATE INDEX live_work_by_automation ON ${s}.records (kind, automation_id) WHERE NOT terminal;
    CREATE INDEX claimable_occurrences ON ${s}.records (scheduled_for, id)
      WHERE kind = 'occurrence' AND NOT terminal AND state IN ('planned', 'eligible');
    CREATE INDEX occurrence_timeline ON ${s}.records (timeline_at, id) WHERE kind = 'occurrence';
    CREATE INDEX occurrence_timeline_by_automation ON ${s}.records (timeline_automation_id, timeline_at, id)
      WHERE kind = 'occurrence';
    CREATE INDEX run_timeline ON ${s}.records (timeline_at, id) WHERE kind = 'run';
    CREATE INDEX run_timeline_by_automation ON ${s}.records (timeline_automation_id, timeline_at, id)
      WHERE kind = 'run';`,
};
