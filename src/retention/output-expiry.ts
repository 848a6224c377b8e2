import { canReadEvidence } from '../domain/evidence-access.js';
import type { StepContext } from '../domain/lifecycle.js';
import { attemptContext, type AttemptRecord } from '../domain/records.js';
import type { EngineServices } from '../domain/services.js';
import type { EvidenceLocation, Runtime } from '../runtime/runtime.js';
import type { StoredRecord } from '../store/store.js';

/**
 * `output-expiry/<runtimeId>`, id `<attemptId>`: a compacted attempt's session whose output its runtime still
 * keeps. Written in the compaction's own transaction; removed once the runtime has let the output go.
 */
export const outputExpiryKind = (runtimeId: string): string => `output-expiry/${runtimeId}`;

interface OutputExpiry {
  sessionId: string;
  /** Where the launch recorded its evidence: only a runtime that reads it there removes it. */
  evidenceLocation?: EvidenceLocation;
  launcherId?: string;
}

/** Entries read per page while looking for the ones this engine's runtimes can remove. */
const PAGE = 200;

/**
 * Queues the output of a compacted attempt's session for removal. Called inside the compaction's transaction:
 * the files go only after the attempt (and with it every read of its output) is gone for good, and a crash
 * after that commit leaves the entry, so the next sweep removes what the crash left.
 */
export async function queueOutputExpiry(step: StepContext, attempt: AttemptRecord): Promise<void> {
  const sessionId = attemptContext(attempt).sessionId;
  if (sessionId === null) return;
  const a = attempt.data.attributes;
  const workerId = a.workerCorrelation?.workerId;
  const entry: OutputExpiry = {
    sessionId,
    ...(a.evidenceLocation === undefined ? {} : { evidenceLocation: a.evidenceLocation }),
    ...(workerId === undefined ? {} : { launcherId: workerId }),
  };
  const kind = outputExpiryKind(a.runtimeId);
  if ((await step.tx.get(kind, attempt.id)) === undefined)
    await step.tx.put(kind, attempt.id, entry, { expectedVersion: null });
}

/** Lets the runtime remove each readable entry's output; answers the entries whose output is gone. */
async function expirePage(
  svc: EngineServices,
  runtime: Runtime,
  page: Array<StoredRecord<OutputExpiry>>,
  budget: number,
  errors: Error[],
): Promise<Array<StoredRecord<OutputExpiry>>> {
  const done: Array<StoredRecord<OutputExpiry>> = [];
  for (const entry of page) {
    if (done.length >= budget) break;
    const { sessionId, evidenceLocation, launcherId } = entry.data;
    if (!canReadEvidence(svc, runtime, evidenceLocation, launcherId)) continue;
    try {
      // A session still running (a process that outlived its attempt) is asked about again next sweep.
      if (runtime.expireSession === undefined || (await runtime.expireSession(sessionId))) done.push(entry);
    } catch (error) {
      errors.push(new Error(`retention: output of ${entry.id}: ${(error as Error).message}`, { cause: error }));
    }
  }
  return done;
}

/**
 * Removes the queued outputs this engine's runtimes can reach, at most `budget` of them: the runtime lets each
 * session's output go, then the page's entries are deleted in one commit. A runtime that keeps no output has
 * nothing to remove; an entry of a runtime this engine lacks, or of evidence another host keeps, waits for an
 * engine that has it. Answers how many outputs were removed.
 */
export async function expireSessionOutputs(svc: EngineServices, budget: number, errors: Error[]): Promise<number> {
  let removed = 0;
  for (const [runtimeId, runtime] of svc.runtimes) {
    const kind = outputExpiryKind(runtimeId);
    let after: string | undefined;
    while (removed < budget) {
      const options = { ...(after === undefined ? {} : { after }), limit: PAGE };
      const page = await svc.store.read((r) => r.list<OutputExpiry>(kind, options));
      const done = await expirePage(svc, runtime, page, budget - removed, errors);
      if (done.length > 0) {
        await svc.step(async (step) => {
          for (const entry of done) {
            const fresh = await step.tx.get(kind, entry.id);
            if (fresh !== undefined) await step.tx.delete(kind, entry.id, fresh.version);
          }
        });
        removed += done.length;
      }
      if (page.length < PAGE) break;
      after = page.at(-1)!.id;
    }
  }
  return removed;
}
