import type { CommandResponse } from '../../command-handler/envelope.js';
import { envelope, type VectorRun } from './vector-session.js';

/** The runner's principal (vector-session.ts's envelopes), and one that holds no grant anywhere. */
const RUNNER = 'conformance-runner';
const OUTSIDER = 'conformance-outsider';
/** The label upstream's vectors give the access-control layer's refusal of an unauthorised read. */
export const UNAUTHORIZED_READ = 'unauthorized-read';

/**
 * A capability a vector may name as a prerequisite, and how the runner provides it: `setup` after the definitions
 * and bindings are in place, `probe` after the vector's ops, to exercise what the ops themselves do not.
 */
export interface Prerequisite {
  setup(run: VectorRun): Promise<void>;
  probe(run: VectorRun): Promise<void>;
}

const outsider = (name: string, payload: Record<string, unknown>) => ({
  ...envelope(name, payload),
  origin: { principal: { principalId: OUTSIDER }, channel: 'cli' },
});

/** coven.automations.acl.v1 setup: every definition restricted to the runner (x-coven-automata.acl.grant.v1). */
async function restrictReads(run: VectorRun): Promise<void> {
  for (const automationId of await run.definitionIds()) {
    const granted = await run.engine.commands.handle(
      envelope('x-coven-automata.acl.grant.v1', { automationId, principalId: RUNNER }),
    );
    if (granted.outcome === 'rejected') run.notes.push(`acl: grant on ${automationId} refused: ${granted.error?.code}`);
  }
  run.notes.push(`acl: every definition's reads restricted to ${RUNNER} (x-coven-automata.acl.grant.v1)`);
}

/**
 * coven.automations.acl.v1 probe: each definition's history (run.history.v1) and changefeed (events.read.v1 of its
 * stream, and the global feed) read by the runner and by a principal with no grant. The refusal counts only when
 * every outsider read was refused as AUTHORITY_REQUIRED and every runner read of the same records committed, so an
 * engine that refuses every read, or leaks one, does not pass.
 */
async function probeReads(run: VectorRun): Promise<void> {
  const reads: Array<[string, Record<string, unknown>]> = [['events.read.v1', { stream: { kind: 'feed', id: 'all' } }]];
  for (const automationId of await run.definitionIds())
    reads.push(
      ['run.history.v1', { automationId }],
      ['events.read.v1', { stream: { kind: 'automation', id: automationId } }],
    );
  let refusal: CommandResponse | undefined;
  let sound = true;
  for (const [name, payload] of reads) {
    const what = `${name} ${JSON.stringify(payload)}`;
    const mine = await run.engine.commands.handle(envelope(name, payload));
    const theirs = await run.engine.commands.handle(outsider(name, payload));
    const refused = theirs.outcome === 'rejected' && theirs.error?.code === 'AUTHORITY_REQUIRED';
    if (mine.outcome !== 'committed') run.notes.push(`acl probe: ${RUNNER}'s own ${what} was refused`);
    if (!refused) run.notes.push(`acl probe: ${OUTSIDER}'s ${what} was not refused by the ACL: ${theirs.outcome}`);
    sound &&= mine.outcome === 'committed' && refused;
    refusal ??= refused ? theirs : undefined;
  }
  if (sound && refusal !== undefined) run.refusals.set(UNAUTHORIZED_READ, refusal);
  run.notes.push(`acl probe: ${reads.length} reads by ${OUTSIDER} (no grant), each also read by ${RUNNER}`);
}

/** Prerequisites this engine provides. Any other a vector names is missing, and what depends on it unsupported. */
export const PREREQUISITES: Readonly<Record<string, Prerequisite>> = {
  'coven.automations.acl.v1': { setup: restrictReads, probe: probeReads },
};
