// Schema version 8: the changefeed orders an automation's live occurrences as the database did.
//
// Feed positions follow transaction ids (feed-clock.ts), and an id is taken when a transaction starts, not when it
// commits. The one-live index keeps the database right, but not the feed: a run-now whose snapshot saw the slot's
// occurrence still planned could commit its claim after that occurrence went live and settled (the index had
// nothing left to refuse), with a transaction id older than both, so the feed showed its claim first and two live
// occurrences at once. Here every write that brings an occurrence into a live state takes its automation's next
// turn, an update of one row per automation. Under REPEATABLE READ the second of two transactions updating that
// row is refused (serialization failure, retried as a lost race) unless its snapshot already held the first's
// commit. So each claim's snapshot holds every earlier claim of its automation, and with it the end of the
// occurrence that claim made live, or else sees that occurrence still live and is refused by the overlap check.
// Either way an occurrence's end is older in the feed than the next claim of its automation, because a
// transaction's id is taken after its snapshot and a committed one's before its commit. Leaving a live state takes
// no turn: the claim that follows is the one that must see it. The trigger keeps this in the database, for every
// path that writes a record; the text is written out, not derived from code, as every migration's is.

const LIVE_STATES = `('claimed', 'dispatching', 'running', 'recovering', 'recovery_required')`;

export const LIVE_TURNS_MIGRATION = {
  version: 8,
  sql: (s: string) => `
    CREATE TABLE ${s}.live_turns (automation_id text COLLATE "C" PRIMARY KEY, turn bigint NOT NULL);
    CREATE FUNCTION ${s}.take_live_turn() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ${s}.live_turns AS t (automation_id, turn) VALUES (NEW.automation_id, 1)
          ON CONFLICT (automation_id) DO UPDATE SET turn = t.turn + 1;
        RETURN NULL;
      END $$;
    CREATE TRIGGER live_turn_on_insert AFTER INSERT ON ${s}.records FOR EACH ROW
      WHEN (NEW.kind = 'occurrence' AND NEW.state IN ${LIVE_STATES} AND NEW.automation_id IS NOT NULL)
      EXECUTE FUNCTION ${s}.take_live_turn();
    CREATE TRIGGER live_turn_on_update AFTER UPDATE ON ${s}.records FOR EACH ROW
      WHEN (NEW.kind = 'occurrence' AND NEW.state IN ${LIVE_STATES} AND NEW.automation_id IS NOT NULL
        AND (OLD.state IS NULL OR OLD.state NOT IN ${LIVE_STATES}))
      EXECUTE FUNCTION ${s}.take_live_turn();`,
};
