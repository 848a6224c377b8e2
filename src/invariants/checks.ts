import type { EventEnvelope } from '../changefeed/event-envelope.js';
import { Schedule } from '../schedule/schedule.js';
import type { StoredRecord } from '../store/store.js';
import type { History } from './history.js';

type Rec = StoredRecord<Record<string, unknown>>;
type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One checked invariant: a named rule over the store's history and the runtime's log. */
export interface InvariantCheck {
  id: string;
  /** `contract`: one of the ten; `conformance`: a hard gate of upstream's conformance plane. */
  source: 'contract' | 'conformance';
  check(current: History, previous: History | undefined): string[];
}

const TERMINAL: Record<string, Set<string>> = {
  occurrence: new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'skipped', 'superseded']),
  run: new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'ambiguous']),
  attempt: new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'ambiguous']),
};

const state = (r: Rec | undefined) => (r?.data as Any | undefined)?.snapshot?.value as string | undefined;
const attrs = (r: Rec) => (r.data as Any).attributes as Any;
const ctx = (r: Rec) => (r.data as Any).snapshot.context as Any;
const same = (a: Rec, b: Rec) => a.version === b.version && JSON.stringify(a.data) === JSON.stringify(b.data);

/** Transition events in feed order, each with its global position (what launches and passes compare with). */
function transitions(h: History): Array<{ position: number; event: EventEnvelope; entityId: string }> {
  const out = [];
  for (const [index, event] of h.feed.entries()) {
    if (!event.kind.endsWith('.transitioned')) continue;
    const entity = event.payload.entity as string;
    const entityId = entity === 'attempt' ? event.attemptId! : entity === 'run' ? event.runId! : event.occurrenceId!;
    out.push({ position: h.positions[index]!, event, entityId });
  }
  return out;
}

function attemptsOfRun(h: History, runId: string): Rec[] {
  return [...h.records.attempt.values()]
    .filter((a) => ctx(a).runId === runId)
    .sort((a, b) => ctx(a).attemptNumber - ctx(b).attemptNumber);
}

/**
 * Retention compacts only settled history, only behind a snapshot, and leaves nothing of it behind that
 * could still act: checked whenever a world runs with retention (vacuous otherwise).
 */
export const COMPACTION_CHECK: InvariantCheck = {
  id: 'compaction-behind-snapshot',
  source: 'conformance',
  check(h) {
    const problems: string[] = [];
    for (const e of h.compacted.snapshots) {
      if (e.payload.throughSequence !== e.sequence)
        problems.push(
          `snapshot of ${e.stream.kind}/${e.stream.id} covers ${String(e.payload.throughSequence)} but sits at ${e.sequence}`,
        );
      const state = e.payload.state as Any;
      if (e.stream.kind === 'occurrence' && !TERMINAL.occurrence!.has(state.occurrence?.state))
        problems.push(`occurrence ${e.stream.id} was compacted in state ${String(state.occurrence?.state)}`);
      if (e.stream.kind === 'run') {
        if (!TERMINAL.run!.has(state.run?.state))
          problems.push(`run ${e.stream.id} was compacted in state ${String(state.run?.state)}`);
        for (const a of state.run?.attempts ?? [])
          if (!TERMINAL.attempt!.has(a.state))
            problems.push(`attempt ${a.attemptId} was compacted in state ${String(a.state)}`);
      }
    }
    const { occurrences, runs, attempts } = h.compacted;
    for (const [kind, ids] of [
      ['occurrence', occurrences],
      ['run', runs],
      ['attempt', attempts],
    ] as const) {
      for (const id of ids)
        if (h.records[kind].has(id)) problems.push(`${kind} ${id} was compacted but its record remains`);
    }
    for (const r of h.records.outbox.values())
      if (attempts.has((r.data as Any).attemptId))
        problems.push(`outbox ${r.id} of compacted attempt ${(r.data as Any).attemptId} remains`);
    for (const id of h.records['fence-run'].keys())
      if (occurrences.has(id.slice(0, id.lastIndexOf('#'))))
        problems.push(`fence record ${id} of a compacted occurrence remains`);
    for (const r of h.records.run.values())
      if (occurrences.has(ctx(r).occurrenceId))
        problems.push(`run ${r.id} outlived its compacted occurrence ${ctx(r).occurrenceId}`);
    return problems;
  },
};

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
        if (t.event.payload.entity === 'attempt' && t.event.payload.to === 'started')
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
        if (state(a) !== 'succeeded') continue;
        const session = attrs(a).workerCorrelation?.sessionId as string | undefined;
        const exit = session === undefined ? undefined : h.runtime.exits.get(session);
        if (exit === undefined || exit.outcome !== 'succeeded' || exit.cancelled)
          problems.push(`attempt ${a.id} succeeded without the runtime reporting a successful exit`);
        if (!receipts.some((r) => r.attemptId === a.id && r.outcome.disposition === 'succeeded'))
          problems.push(`attempt ${a.id} succeeded without a receipt`);
      }
      for (const r of h.records.run.values()) {
        if (state(r) !== 'succeeded') continue;
        const lastAttempt = h.records.attempt.get(attrs(r).attemptIds.at(-1));
        if (state(lastAttempt) !== 'succeeded' || !h.records.receipt.has(attrs(r).receiptRef))
          problems.push(`run ${r.id} succeeded without a succeeded attempt and its receipt`);
      }
      for (const o of h.records.occurrence.values()) {
        if (state(o) === 'succeeded' && state(h.records.run.get(attrs(o).activeRunRef)) !== 'succeeded')
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
        if (state(a) !== 'cancelled') continue;
        const session = attrs(a).workerCorrelation?.sessionId as string | undefined;
        if (session === undefined) continue;
        const asked = h.runtime.cancels.some((c) => c.sessionId === session);
        const acknowledged = h.runtime.exits.get(session)?.cancelled === true;
        if (!asked || !acknowledged)
          problems.push(
            `attempt ${a.id} settled cancelled but its session ${session} was ${asked ? 'never acknowledged' : 'never asked to stop'}`,
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
        const firstAmbiguous = attempts.findIndex((a) => state(a) === 'ambiguous');
        if (firstAmbiguous === -1) continue;
        for (const later of attempts.slice(firstAmbiguous + 1)) {
          const key = opened.get(later.id)?.payload.commandAdoptionKey as string | undefined;
          const command =
            key === undefined ? undefined : (h.records.adoption.get(key)?.data as Any | undefined)?.command;
          if (command !== 'occurrence.recover.v1')
            problems.push(
              `attempt ${later.id} opened after ambiguous work without occurrence.recover.v1 (by ${String(command ?? 'the engine itself')})`,
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
          if (t.event.automationId === d.id && t.event.payload.to === 'claimed' && t.event.recordedAt > tombstonedAt)
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
  {
    id: 'no-duplicate-dispatch-per-fence',
    source: 'conformance',
    check(h) {
      const byFence = new Map<string, number>();
      for (const l of h.runtime.launches) {
        const attempt = h.records.attempt.get(l.attemptId);
        const fence =
          attempt === undefined
            ? `unknown:${l.attemptId}`
            : `${ctx(attempt).occurrenceId}#${ctx(attempt).fenceGeneration}`;
        byFence.set(fence, (byFence.get(fence) ?? 0) + 1);
      }
      return [...byFence].filter(([, n]) => n > 1).map(([fence, n]) => `fence ${fence} was dispatched ${n} times`);
    },
  },
  {
    id: 'no-silent-slot-loss',
    source: 'conformance',
    check(h) {
      const problems: string[] = [];
      if (h.passes.length === 0) return problems;
      const covered = new Set<string>();
      for (const o of h.records.occurrence.values()) covered.add(`${attrs(o).automationId}@${attrs(o).scheduledFor}`);
      // A slot's key outlives its occurrence's retention; a compacted occurrence's snapshot keeps its misfire.
      for (const key of h.records['occurrence-key'].keys()) covered.add(key);
      for (const e of h.feed)
        if (e.kind === 'occurrence.misfire_recorded')
          for (const s of e.payload.collapsedSlots as string[]) covered.add(`${e.automationId}@${s}`);
      for (const e of h.compacted.snapshots) {
        for (const s of ((e.payload.state as Any).occurrence?.collapsedSlots as string[] | undefined) ?? [])
          covered.add(`${e.automationId}@${s}`);
      }
      for (const d of h.records.definition.values()) {
        if (state(d) !== 'active' || h.records.quarantine.has(d.id)) continue;
        const from = attrs(d).scheduleEffectiveFrom as string | undefined;
        if (from === undefined) continue;
        const body = attrs(d).definition as Any;
        // Only passes that began after the schedule took effect (activation or the last revise) had to plan it.
        const index = h.feed.findLastIndex(
          (e) => e.automationId === d.id && (e.kind === 'definition.activated' || e.kind === 'definition.revised'),
        );
        const effective = index === -1 ? -1 : h.positions[index]!;
        const passedSince = h.passes.filter((p) => p.feedEnd > effective);
        const lastPass = passedSince.at(-1);
        if (lastPass === undefined) continue;
        const since = Math.max(Date.parse(from) - 1, Date.parse(lastPass.at) - 15 * 86_400_000);
        const slots = new Schedule(body.trigger.schedule.rrule, body.trigger.schedule.timezone).slotsBetween(
          new Date(since),
          new Date(lastPass.at),
        );
        for (const s of slots)
          if (!covered.has(`${d.id}@${s.toISOString()}`))
            problems.push(`slot ${s.toISOString()} of active ${d.id} was neither planned nor recorded as a misfire`);
      }
      return problems;
    },
  },
  {
    id: 'gapless-changefeed',
    source: 'conformance',
    check(h) {
      const problems: string[] = [];
      const next = new Map<string, number>();
      h.streams.forEach((stream, i) => {
        const expected = next.get(stream) ?? 0;
        if (h.sequences[i] !== expected)
          problems.push(`stream ${stream} has sequence ${h.sequences[i]} where ${expected} was due`);
        next.set(stream, expected + 1);
      });
      const ids = h.feed.map((e) => e.eventId);
      if (new Set(ids).size !== ids.length) problems.push('event ids are not unique');
      return problems;
    },
  },
  COMPACTION_CHECK,
];

export const CONTRACT_INVARIANT_IDS = INVARIANTS.filter((i) => i.source === 'contract').map((i) => i.id);
