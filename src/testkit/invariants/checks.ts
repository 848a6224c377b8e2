import { AttemptState, OccurrenceState, RunState } from '../../../machines/index.js';
import { CONFORMANCE_CHECKS } from './conformance-checks.js';
import {
  attemptsOfRun,
  attrs,
  ctx,
  same,
  state,
  TERMINAL,
  transitions,
  type Any,
  type InvariantCheck,
} from './check-helpers.js';

export type { InvariantCheck } from './check-helpers.js';

/** The contract's ten invariants, plus upstream's conformance gates, as checks over history. */
export const INVARIANTS: InvariantCheck[] = [
  {
    id: 'adoption-before-side-effects',
    source: 'contract',
    check(h) {
      const problems: string[] = [];
      const all = transitions(h);
      for (const launch of h.runtime.launches) {
        const adopted = all.find(
          (t) =>
            t.event.payload.entity === 'attempt' && t.entityId === launch.attemptId && t.event.payload.from === 'none',
        );
        const attempt = h.records.attempt.get(launch.attemptId);
        const accepted =
          attempt === undefined
            ? undefined
            : all.find(
                (t) =>
                  t.event.payload.entity === 'run' &&
                  t.entityId === ctx(attempt).runId &&
                  t.event.payload.from === 'none',
              );
        if (adopted === undefined || accepted === undefined)
          problems.push(
            `launch ${launch.sessionKey} of attempt ${launch.attemptId} has no accepted run and adopted attempt`,
          );
        else if (adopted.position >= launch.feedEnd || accepted.position >= launch.feedEnd) {
          problems.push(`launch ${launch.sessionKey} happened before the adoption of ${launch.attemptId} was durable`);
        }
      }
      return problems;
    },
  },
  {
    id: 'one-fence-one-run',
    source: 'contract',
    check(h) {
      const byFence = new Map<string, string[]>();
      for (const run of h.records.run.values()) {
        const key = `${ctx(run).occurrenceId}#${ctx(run).fenceGeneration}`;
        byFence.set(key, [...(byFence.get(key) ?? []), run.id]);
      }
      return [...byFence]
        .filter(([, runs]) => runs.length > 1)
        .map(([fence, runs]) => `fence ${fence} owns ${runs.length} runs: ${runs.join(', ')}`);
    },
  },
  {
    id: 'one-attempt-one-session',
    source: 'contract',
    check(h) {
      const sessions = new Map<string, Set<string>>();
      for (const l of h.runtime.launches)
        if (l.sessionId !== undefined)
          sessions.set(l.attemptId, new Set([...(sessions.get(l.attemptId) ?? []), l.sessionId]));
      const problems = [...sessions]
        .filter(([, s]) => s.size > 1)
        .map(([attempt, s]) => `attempt ${attempt} is bound to ${s.size} sessions`);
      const starts = new Map<string, number>();
      for (const t of transitions(h))
        if (t.event.payload.entity === 'attempt' && t.event.payload.to === AttemptState.started)
          starts.set(t.entityId, (starts.get(t.entityId) ?? 0) + 1);
      problems.push(
        ...[...starts].filter(([, n]) => n > 1).map(([attempt, n]) => `attempt ${attempt} started ${n} times`),
      );
      return problems;
    },
  },
  {
    id: 'terminal-no-regress',
    source: 'contract',
    check(h, previous) {
      const problems: string[] = [];
      const last = new Map<string, string>();
      for (const t of transitions(h)) {
        const entity = t.event.payload.entity as string;
        const key = `${entity}/${t.entityId}`;
        const before = last.get(key);
        if (before !== undefined && TERMINAL[entity]!.has(before))
          problems.push(`${key} left terminal state ${before} for ${String(t.event.payload.to)}`);
        last.set(key, t.event.payload.to as string);
      }
      for (const kind of ['occurrence', 'run', 'attempt'] as const) {
        for (const r of h.records[kind].values()) {
          const recorded = last.get(`${kind}/${r.id}`);
          if (recorded !== undefined && recorded !== state(r))
            problems.push(`${kind} ${r.id} is ${String(state(r))} but its events end in ${recorded}`);
          const was = previous?.records[kind].get(r.id);
          if (was !== undefined && TERMINAL[kind]!.has(state(was)!) && !same(was, r))
            problems.push(`terminal ${kind} ${r.id} was rewritten`);
        }
      }
      return problems;
    },
  },
  {
    id: 'no-evidence-no-success',
    source: 'contract',
    check(h) {
      const problems: string[] = [];
      const receipts = [...h.records.receipt.values()].map((r) => r.data as Any);
      for (const a of h.records.attempt.values()) {
        if (state(a) !== AttemptState.succeeded) continue;
        const session = attrs(a).workerCorrelation?.sessionId as string | undefined;
        const exit = session === undefined ? undefined : h.runtime.exits.get(session);
        if (exit === undefined || exit.outcome !== 'succeeded' || exit.cancelled)
          problems.push(`attempt ${a.id} succeeded without the runtime reporting a successful exit`);
        if (!receipts.some((r) => r.attemptId === a.id && r.outcome.disposition === 'succeeded'))
          problems.push(`attempt ${a.id} succeeded without a receipt`);
      }
      for (const r of h.records.run.values()) {
        if (state(r) !== RunState.succeeded) continue;
        const lastAttempt = h.records.attempt.get(attrs(r).attemptIds.at(-1));
        if (state(lastAttempt) !== AttemptState.succeeded || !h.records.receipt.has(attrs(r).receiptRef))
          problems.push(`run ${r.id} succeeded without a succeeded attempt and its receipt`);
      }
      for (const o of h.records.occurrence.values()) {
        if (
          state(o) === OccurrenceState.succeeded &&
          state(h.records.run.get(attrs(o).activeRunRef)) !== RunState.succeeded
        )
          problems.push(`occurrence ${o.id} succeeded without a succeeded run`);
      }
      return problems;
    },
  },
  {
    id: 'cancellation-is-a-request',
    source: 'contract',
    check(h) {
      const problems: string[] = [];
      for (const a of h.records.attempt.values()) {
        if (state(a) !== AttemptState.cancelled) continue;
        const session = attrs(a).workerCorrelation?.sessionId as string | undefined;
        if (session === undefined) continue;
        const asked = h.runtime.cancels.some((c) => c.sessionId === session);
        const acknowledged = h.runtime.exits.get(session)?.cancelled === true;
        if (!asked || !acknowledged)
          problems.push(
            `attempt ${a.id} settled cancelled but its session ${session} was ` +
              `${asked ? 'never acknowledged' : 'never asked to stop'}`,
          );
      }
      return problems;
    },
  },
  {
    id: 'retry-new-attempt',
    source: 'contract',
    check(h, previous) {
      const problems: string[] = [];
      for (const run of h.records.run.values()) {
        const attempts = attemptsOfRun(h, run.id);
        attempts.forEach((a, i) => {
          const n = ctx(a).attemptNumber as number;
          if (n !== i + 1)
            problems.push(`run ${run.id}: attempt numbers are not 1..n (found ${n} at position ${i + 1})`);
          if (n > 1) {
            const prior = attempts[i - 1];
            const disposition = attrs(a).priorDisposition as Any | undefined;
            if (
              disposition === undefined ||
              prior === undefined ||
              disposition.attemptNumber !== n - 1 ||
              disposition.outcome !== state(prior)
            ) {
              problems.push(`attempt ${a.id} does not name its prior attempt's disposition`);
            }
          }
        });
      }
      for (const [id, was] of previous?.records.attempt ?? []) {
        const now = h.records.attempt.get(id);
        if (now !== undefined && TERMINAL.attempt!.has(state(was)!) && !same(was, now))
          problems.push(`prior attempt ${id} was rewritten`);
      }
      return problems;
    },
  },
  {
    id: 'ambiguous-never-auto-retried',
    source: 'contract',
    check(h) {
      const problems: string[] = [];
      const opened = new Map(
        transitions(h)
          .filter((t) => t.event.payload.entity === 'attempt' && t.event.payload.from === 'none')
          .map((t) => [t.entityId, t.event]),
      );
      for (const run of h.records.run.values()) {
        const attempts = attemptsOfRun(h, run.id);
        const firstAmbiguous = attempts.findIndex((a) => state(a) === AttemptState.ambiguous);
        if (firstAmbiguous === -1) continue;
        for (const later of attempts.slice(firstAmbiguous + 1)) {
          const key = opened.get(later.id)?.payload.commandAdoptionKey as string | undefined;
          const command =
            key === undefined ? undefined : (h.records.adoption.get(key)?.data as Any | undefined)?.command;
          if (command !== 'occurrence.recover.v1')
            problems.push(
              `attempt ${later.id} opened after ambiguous work without occurrence.recover.v1 (by ` +
                `${String(command ?? 'the engine itself')})`,
            );
        }
      }
      return problems;
    },
  },
  {
    id: 'revision-pins-history',
    source: 'contract',
    check(h, previous) {
      const problems: string[] = [];
      for (const kind of ['occurrence', 'run'] as const) {
        for (const r of h.records[kind].values()) {
          const a = attrs(r);
          const pinned = h.records['definition-revision'].get(`${a.automationId}@${a.automationRevision}`);
          if (pinned === undefined || (pinned.data as Any).integrity.value !== a.definitionDigest.value)
            problems.push(
              `${kind} ${r.id} pins revision ${a.automationRevision} with a digest that revision does not have`,
            );
          const was = previous?.records[kind].get(r.id);
          if (
            was !== undefined &&
            (attrs(was).automationRevision !== a.automationRevision ||
              attrs(was).definitionDigest.value !== a.definitionDigest.value)
          ) {
            problems.push(
              `${kind} ${r.id} moved from revision ${attrs(was).automationRevision} to ${a.automationRevision}`,
            );
          }
        }
      }
      for (const [id, was] of previous?.records.receipt ?? []) {
        const now = h.records.receipt.get(id);
        if (now !== undefined && !same(was, now)) problems.push(`receipt ${id} was rewritten`);
      }
      return problems;
    },
  },
  {
    id: 'tombstone-preserves-history',
    source: 'contract',
    check(h, previous) {
      const problems: string[] = [];
      for (const d of h.records.definition.values()) {
        const tombstonedAt = attrs(d).tombstonedAt as string | null;
        if (tombstonedAt === null) continue;
        const mine = [...h.records.occurrence.values()].filter((o) => attrs(o).automationId === d.id);
        for (const o of mine)
          if (attrs(o).createdAt > tombstonedAt)
            problems.push(`occurrence ${o.id} was planned after ${d.id} was tombstoned`);
        for (const t of transitions(h)) {
          if (
            t.event.automationId === d.id &&
            t.event.payload.to === OccurrenceState.claimed &&
            t.event.recordedAt > tombstonedAt
          )
            problems.push(`occurrence ${t.entityId} was claimed after ${d.id} was tombstoned`);
        }
        const attempts = new Set(
          [...h.records.attempt.values()]
            .filter((a) => mine.some((o) => o.id === ctx(a).occurrenceId))
            .map((a) => a.id),
        );
        for (const l of h.runtime.launches)
          if (attempts.has(l.attemptId) && l.at > tombstonedAt)
            problems.push(`attempt ${l.attemptId} launched after ${d.id} was tombstoned`);
      }
      // Retention is the one way history leaves: what it compacted is accounted for by a snapshot.
      const compactedIds: Record<string, Set<string>> = {
        occurrence: h.compacted.occurrences,
        run: h.compacted.runs,
        attempt: h.compacted.attempts,
      };
      const receiptCompacted = (id: string) => h.compacted.attempts.has(id.replace(/^receipt-/, ''));
      for (const kind of ['definition', 'definition-revision', 'occurrence', 'run', 'attempt', 'receipt'] as const) {
        for (const id of previous?.records[kind].keys() ?? []) {
          if (
            h.records[kind].has(id) ||
            compactedIds[kind]?.has(id) === true ||
            (kind === 'receipt' && receiptCompacted(id))
          )
            continue;
          problems.push(`${kind} ${id} disappeared from history`);
        }
      }
      return problems;
    },
  },
  ...CONFORMANCE_CHECKS,
];

export const CONTRACT_INVARIANT_IDS = INVARIANTS.filter((i) => i.source === 'contract').map((i) => i.id);
