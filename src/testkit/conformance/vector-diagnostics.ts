import { runDoctor } from '../../observability/run-doctor.js';
import type { DoctorReport } from '../../observability/doctor.js';
import type { ConformanceVector } from './vector-format.js';
import type { Seen } from './vector-observe.js';
import type { VectorRun } from './vector-session.js';

type Push = (expectation: string, ok: boolean, expected: unknown, observed: unknown) => void;

/**
 * The real doctor over the vector's store, with what only a scheduler knows taken from the ops: leadership (the
 * engine's own, which `setLeader` can take away), the last pass (`tick`), the subscriber's cursor (`subscribe`,
 * `deliver`), the retention.
 */
export async function doctorOf(run: VectorRun): Promise<DoctorReport> {
  const { isLeader, leaderId, replacedByGeneration } = await run.engine.leadership();
  return runDoctor(run.engine, {
    leader: { isLeader, leaderId, ...(replacedByGeneration === undefined ? {} : { replacedByGeneration }) },
    lastPassAt: run.lastPassAt ?? null,
    lastSuccessfulPassAt: run.lastPassAt ?? null,
    ...(run.subscriber === undefined
      ? {}
      : { subscribers: [{ subscriberId: 'conformance-subscriber', position: run.subscriber.position }] }),
    ...(run.retention === undefined ? {} : { retention: run.retention }),
  });
}

/** `findingCodes` must all be found ([]: none at all); `noCodes` must all be absent. */
export async function checkDoctor(e: ConformanceVector['expected'], run: VectorRun, push: Push): Promise<void> {
  if (e.doctor === undefined) return;
  const want = e.doctor as { findingCodes?: string[]; noCodes?: string[] };
  const codes = (await doctorOf(run)).findings.map((f) => f.code as string);
  if (want.findingCodes !== undefined && want.findingCodes.length === 0)
    push('doctor.findings', codes.length === 0, [], codes);
  for (const code of want.findingCodes ?? []) push(`doctor.${code}`, codes.includes(code), code, codes);
  for (const code of want.noCodes ?? []) push(`doctor.not ${code}`, !codes.includes(code), `not ${code}`, codes);
}

/**
 * `redaction.forbiddenSubstrings` must appear in nothing the engine reports about runs: occurrences, runs,
 * receipts, the run and occurrence events of the changefeed, and the doctor's report. The definition's own
 * records and events carry its prompt by design and are not reports.
 */
export async function checkRedaction(
  e: ConformanceVector['expected'],
  seen: Seen,
  run: VectorRun,
  push: Push,
): Promise<void> {
  if (e.redaction === undefined) return;
  const want = e.redaction as { forbiddenSubstrings?: string[] };
  const reports = JSON.stringify([
    seen.occurrences,
    seen.runs,
    seen.receipts,
    seen.feed.filter((ev) => !ev.kind.startsWith('definition.')),
    await doctorOf(run),
  ]);
  for (const s of want.forbiddenSubstrings ?? [])
    push(`redaction.${s}`, !reports.includes(s), `absent: ${s}`, reports.includes(s) ? 'present' : 'absent');
}
