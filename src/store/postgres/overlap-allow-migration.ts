// Schema version 9: overlap allow (x-coven-automata.overlap.v1). The one-live index kept every automation to one
// occurrence in a live state, which is the contract's overlap forbid and what every other policy still needs. An
// occurrence of a definition revision whose overlap policy is `allow` says so in its attributes (`overlap`), set
// when it is planned and never changed, and the index leaves exactly those out: they may be live beside anything,
// while any two occurrences without it still conflict as before. Live turns (version 8) are unchanged: claims of
// one automation still take its turn, so the feed keeps its order for the occurrences the index still governs. The
// text is written out, not derived from code, as every migration's is.

const LIVE_STATES = `('claimed', 'dispatching', 'running', 'recovering', 'recovery_required')`;

export const OVERLAP_ALLOW_MIGRATION = {
  version: 9,
  sql: (s: string) => `
    DROP INDEX ${s}.one_live_occurrence_per_automation;
    CREATE UNIQUE INDEX one_live_occurrence_per_automation ON ${s}.records (automation_id)
      WHERE kind = 'occurrence' AND state IN ${LIVE_STATES}
        AND (data->'attributes'->>'overlap') IS DISTINCT FROM 'allow';`,
};
