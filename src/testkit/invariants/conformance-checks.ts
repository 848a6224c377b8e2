import { QuarantineState } from '../../../machines/extension-states.js';
import { outboxView } from '../../domain/outbox.js';
import { quarantineView } from '../../domain/quarantine.js';
import { DefinitionState, type OccurrenceState } from '../../../machines/index.js';
import { OCCURRENCE_LIVE } from '../../domain/records.js';
import { makeSchedule, type ScheduleTerms } from '../../schedule/schedule-extension.js';
import { attrs, ctx, state, TERMINAL, transitions, type Any, type InvariantCheck } from './check-helpers.js';

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
          `snapshot of ${e.stream.kind}/${e.stream.id} covers ${String(e.payload.throughSequence)} but sits at ` +
            `${e.sequence}`,
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
    for (const r of h.records.outbox.values()) {
      const { attemptId } = outboxView(r).entry;
      if (attempts.has(attemptId)) problems.push(`outbox ${r.id} of compacted attempt ${attemptId} remains`);
    }
    for (const id of h.records['run-hold'].keys())
      if (runs.has(id)) problems.push(`run hold ${id} of a compacted run remains`);
    for (const id of h.records.delivery.keys())
      if (attempts.has(id)) problems.push(`delivery ${id} of a compacted attempt remains`);
    for (const id of h.records['fence-run'].keys())
      if (occurrences.has(id.slice(0, id.lastIndexOf('#'))))
        problems.push(`fence record ${id} of a compacted occurrence remains`);
    for (const r of h.records.run.values())
      if (occurrences.has(ctx(r).occurrenceId))
        problems.push(`run ${r.id} outlived its compacted occurrence ${ctx(r).occurrenceId}`);
    return problems;
  },
};

/**
 * overlap: forbid over every commit, not only the last: the occurrence transitions replayed in feed (commit) order
 * never leave one automation with two occurrences in live states at once. A compacted occurrence's transitions
 * left the feed with it, both its entry into live work and its end. An occurrence whose revision allows overlap
 * (x-coven-automata.overlap.v1 `allow`, pinned in its attributes) runs beside the others by design and is not
 * counted; a compacted one kept no attributes, and is counted as the contract's.
 */
export const OVERLAP_CHECK: InvariantCheck = {
  id: 'one-live-run-per-automation',
  source: 'conformance',
  check(h) {
    const problems: string[] = [];
    const live = new Map<string, Set<string>>();
    const allowed = (id: string) =>
      (h.records.occurrence.get(id)?.data.attributes as { overlap?: string } | undefined)?.overlap === 'allow';
    for (const t of transitions(h)) {
      if (t.event.payload.entity !== 'occurrence' || t.event.automationId === undefined) continue;
      if (allowed(t.entityId)) continue;
      const mine = live.get(t.event.automationId) ?? new Set<string>();
      live.set(t.event.automationId, mine);
      if (!OCCURRENCE_LIVE.has(t.event.payload.to as OccurrenceState)) mine.delete(t.entityId);
      else if (mine.add(t.entityId).size > 1)
        problems.push(
          `automation ${t.event.automationId} had ${mine.size} live occurrences at feed position ${t.position}: ` +
            [...mine].join(', '),
        );
    }
    return problems;
  },
};

/** Upstream's conformance-plane hard gates, checked beside the contract's ten. */
export const CONFORMANCE_CHECKS: InvariantCheck[] = [
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
        if (
          state(d) !== DefinitionState.active ||
          quarantineView(h.records.quarantine.get(d.id)).state === QuarantineState.quarantined
        )
          continue;
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
        // Engines sharing a store plan each other's share once its slot waited the grace (see PassMark).
        const plannedUntil = Math.max(...passedSince.map((p) => Date.parse(p.at) - p.planGraceMs));
        const since = Math.max(Date.parse(from) - 1, Date.parse(lastPass.at) - 15 * 86_400_000);
        const slots = makeSchedule(body as ScheduleTerms).slotsBetween(new Date(since), new Date(plannedUntil));
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
  OVERLAP_CHECK,
];
