import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { isOccurrenceTerminal } from '../../machines/index.js';
import { command, definition } from '../../bench/fixtures.js';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import { KINDS, attemptContext, type AttemptRecord } from '../../src/domain/records.js';
import { DEFAULT_LEASE_SECONDS } from '../../src/domain/services.js';
import { createEngine } from '../../src/engine/engine.js';
import { OBSERVE_INTERVAL_MS } from '../../src/engine/next-wake.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { INVARIANTS } from '../../src/testkit/invariants/checks.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { eventually } from '../support/eventually.js';
import { propertySeed } from '../support/property.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import {
  killDaemons,
  ledgerCommand,
  passesOf,
  readLedger,
  runNowEnvelope,
  startDaemon,
  stopDaemon,
  type LedgerLine,
  type StartDaemon,
} from './start-daemons.js';

/** CI: a few rounds of two daemons; COVEN_STRESS=1: many rounds of three daemons and more requests. */
const STRESS = process.env.COVEN_STRESS === '1';
const ROUNDS = Number(process.env.COVEN_TAKEOVER_ROUNDS ?? (STRESS ? 10 : 2));
const DAEMONS = STRESS ? 3 : 2;
const REQUESTS = STRESS ? 90 : 20;
/** How long a round may wait for the burst and the settling: stress rounds start 3 daemons and 90 supervisors. */
const WAIT_MS = STRESS ? 400_000 : 120_000;

// CI's rounds run at once (each on its own database and folders) and clean up after themselves; this catches a
// round that failed before its own cleanup.
afterAll(() => killDaemons());

/** A seeded generator of integers in [0, n): the round's random points, replayable from the printed seed. */
function seeded(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** Active definitions due only at an hour twelve hours away, so nothing but the run-now requests runs. */
async function defineAutomations(store: PostgresStore, base: string, ids: string[]): Promise<void> {
  const rrule = `FREQ=DAILY;BYHOUR=${(new Date().getUTCHours() + 12) % 24}`;
  const runtime = new ChildProcessRuntime({ runtimeId: 'coven-code', command: 'false', sessionsDir: join(base, 'x') });
  const setup = createEngine({ store, runtimes: [runtime], retention: false });
  for (const id of ids) {
    await command(setup, 'definition.create.v1', { definition: definition(id, 1, 'draft', rrule) });
    await command(setup, 'definition.revise.v1', { definition: definition(id, 2, 'paused', rrule) }, 1);
    await command(setup, 'definition.activate.v1', { automationId: id }, 2);
  }
  await setup.stop();
}

type OccurrenceView = { id: string; state: string; automationId: string; runId?: string };

async function occurrences(store: PostgresStore): Promise<OccurrenceView[]> {
  const records = await store.read((r) =>
    r.list<{ snapshot: { value: string }; attributes: { automationId: string; activeRunRef?: string } }>(
      KINDS.occurrence,
    ),
  );
  return records.map((o) => ({
    id: o.id,
    state: o.data.snapshot.value,
    automationId: o.data.attributes.automationId,
    ...(o.data.attributes.activeRunRef === undefined ? {} : { runId: o.data.attributes.activeRunRef }),
  }));
}

const decided = (state: string) => isOccurrenceTerminal(state) || state === 'recovery_required';

/** Each occurrence whose attempt `instanceId` launched, with its launch's outbox id. */
async function launchedBy(store: PostgresStore, instanceId: string): Promise<Map<string, string>> {
  const attempts = await store.read((r) => r.list<AttemptRecord['data']>(KINDS.attempt));
  return new Map(
    attempts
      .filter((a) => a.data.attributes.workerCorrelation?.workerId === instanceId)
      .map((a) => {
        const context = attemptContext(a as AttemptRecord);
        return [context.occurrenceId, `${a.id}#${context.dispatchGeneration}`];
      }),
  );
}

/** Each launch's resends: a launch proven never started is fenced and sent again, which decides it. */
async function resends(store: PostgresStore): Promise<Map<string, number>> {
  const outbox = await store.read((r) => r.list<{ snapshot: { context: { resends: number } } }>(KINDS.outbox));
  return new Map(outbox.map((o) => [o.id, o.data.snapshot.context.resends]));
}

/** The final history's invariant problems, the shared ledger standing in for the runtime's log. */
async function invariantProblems(store: PostgresStore, lines: LedgerLine[]): Promise<string[]> {
  const launches = lines.map((l) => ({
    sessionKey: l.sessionId,
    attemptId: l.attemptId,
    at: new Date().toISOString(),
    sessionId: l.sessionId,
    feedEnd: l.feedEnd,
  }));
  const exits = new Map(lines.map((l) => [l.sessionId, { outcome: 'succeeded' as const, cancelled: false }]));
  const runtime = { launches, cancels: [], exits, lost: new Set<string>() };
  const history = await captureHistory(store, runtime, new Date().toISOString(), []);
  return INVARIANTS.flatMap((invariant) => invariant.check(history, undefined).map((p) => `${invariant.id}: ${p}`));
}

/**
 * Sends every request through its daemon at once; answers the requests that got no answer (their daemon died
 * under them) beside the answers that came back.
 */
async function sendAll(daemons: StartDaemon[], requests: Array<{ daemon: number; envelope: unknown }>) {
  const results = await Promise.allSettled(requests.map((r) => daemons[r.daemon]!.client.handle(r.envelope)));
  const answered: CommandResponse[] = [];
  const unanswered: unknown[] = [];
  results.forEach((result, i) => {
    if (result.status === 'fulfilled') answered.push(result.value);
    else unanswered.push(requests[i]!.envelope);
  });
  return { answered, unanswered };
}

async function runRound(socketDir: string, round: number, random: (n: number) => number) {
  const url = await freshDatabase(socketDir, `takeover_${round}`);
  const base = mkdtempSync(join(tmpdir(), 'coven-takeover-'));
  try {
    return await runRoundIn(base, url, round, random);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

async function runRoundIn(base: string, url: string, round: number, random: (n: number) => number) {
  const ledger = join(base, 'ledger');
  const store = await PostgresStore.open(url, { applicationName: 'coven test' });
  const ids = Array.from({ length: REQUESTS }, (_, i) => `takeover-${String(i).padStart(4, '0')}`);
  await defineAutomations(store, base, ids);
  const daemons = await Promise.all(
    Array.from({ length: DAEMONS }, (_, i) => {
      const folder = join(base, `engine-${i}`);
      mkdirSync(folder);
      return startDaemon(url, folder, `host-${round}-${i}`, ledgerCommand(ledger, url));
    }),
  );
  const requests = ids.map((id, i) => ({ daemon: i % DAEMONS, envelope: runNowEnvelope(id, round) }));
  const sending = sendAll(daemons, requests);
  const faultAtLaunch = 1 + random(Math.floor(REQUESTS * 0.6));
  await eventually(async () => (readLedger(ledger).length >= faultAtLaunch ? true : undefined), WAIT_MS);
  const victim = random(DAEMONS);
  daemons[victim]!.child.kill('SIGKILL');
  const faultAt = Date.now();
  const survivors = daemons.filter((_, i) => i !== victim);
  const { answered, unanswered } = await sending;
  const resent = await Promise.all(unanswered.map((envelope) => survivors[0]!.client.handle(envelope)));
  const refused = [...answered, ...resent].filter((a) => a.outcome === 'rejected');
  expect(refused.map((a) => `${a.error?.code}: ${a.error?.message}`)).toEqual([]);
  const victimWork = await launchedBy(store, daemons[victim]!.instanceId);
  const resendsAtFault = await resends(store);
  // The dead daemon's launches are decided once settled, or fenced and sent again (a new session then runs).
  let victimSettledAt: number | undefined;
  const final = await eventually(async () => {
    const all = await occurrences(store);
    const sent = await resends(store);
    const isDecided = (o: OccurrenceView) => {
      const outboxId = victimWork.get(o.id)!;
      return decided(o.state) || (sent.get(outboxId) ?? 0) > (resendsAtFault.get(outboxId) ?? 0);
    };
    if (victimSettledAt === undefined && all.filter((o) => victimWork.has(o.id)).every(isDecided))
      victimSettledAt = Date.now();
    return all.length >= REQUESTS && all.every((o) => decided(o.state)) ? all : undefined;
  }, WAIT_MS);
  const lines = readLedger(ledger);
  const launchesPerRun = new Map<string, number>();
  for (const line of lines) launchesPerRun.set(line.runId, (launchesPerRun.get(line.runId) ?? 0) + 1);
  const launchedRuns = new Set(lines.map((l) => l.runId));
  const states: Record<string, number> = {};
  for (const o of final) states[o.state] = (states[o.state] ?? 0) + 1;
  // A pass's record is written once it ends, after its commits: wait for the one that settled the last of it.
  const settledAt = victimSettledAt ?? Date.now();
  const passesSince = () => survivors.flatMap((d) => passesOf(d.out())).filter((p) => p.end >= faultAt);
  await eventually(async () => (passesSince().some((p) => p.end >= settledAt) ? true : undefined), 30_000).catch(
    () => undefined,
  );
  const passes = passesSince();
  const longestPassMs = Math.max(0, ...passes.map((p) => p.ms));
  const figures = {
    round,
    daemons: DAEMONS,
    requests: REQUESTS,
    faultAtLaunch,
    unanswered: unanswered.length,
    victimLaunches: victimWork.size,
    launches: lines.length,
    duplicateLaunches: [...launchesPerRun.values()].filter((n) => n > 1).length,
    occurrences: final.length,
    automationsWithOneOccurrence: new Set(final.map((o) => o.automationId)).size,
    states,
    completedInRecoveryRequired: final.filter(
      (o) => o.state === 'recovery_required' && o.runId !== undefined && launchedRuns.has(o.runId),
    ).length,
    victimDecidedMs: settledAt - faultAt,
    // Printed, not asserted: the daemon logs only passes that did something, so the idle passes between (which
    // may be the long ones on a loaded machine) are not in the bound; see the report of issue 36.
    boundMs: Math.round(DEFAULT_LEASE_SECONDS * 1000 + 2 * longestPassMs + OBSERVE_INTERVAL_MS),
  };
  // COVEN_SCALE_LOGS=<dir> keeps each daemon's JSON log (a record per pass with work) for diagnosis.
  if (process.env.COVEN_SCALE_LOGS !== undefined)
    daemons.forEach((d, i) =>
      writeFileSync(join(process.env.COVEN_SCALE_LOGS!, `takeover-${round}-daemon-${i}.log`), d.out()),
    );
  // The history is read once no engine writes to this store: on PostgreSQL the feed is served below the
  // visibility horizon, so a read beside a commit in flight may see a record ahead of its stream's events.
  await Promise.all(survivors.map((daemon) => stopDaemon(daemon)));
  const problems = await invariantProblems(store, lines);
  await store.close();
  return { figures, problems };
}

describePostgres('takeover: start daemons on one PostgreSQL store, one SIGKILLed mid-burst', (socketDir) => {
  // CI's two rounds run side by side, so the suite waits out one lease, not two; stress rounds run one by one.
  (STRESS ? test : test.concurrent).each(Array.from({ length: ROUNDS }, (_, i) => ({ round: i + 1 })))(
    `round $round: ${REQUESTS} run-now requests through ${DAEMONS} daemons on their own hosts and folders`,
    async ({ round }) => {
      const seed = propertySeed(`start-daemon takeover round ${round}`);
      const { figures, problems } = await runRound(socketDir, round, seeded(seed + round));
      console.log(`[takeover] ${JSON.stringify(figures)}`);
      expect(figures.duplicateLaunches, 'occurrences launched more than once').toBe(0);
      expect(figures.occurrences, 'one occurrence per run-now request, none lost').toBe(REQUESTS);
      expect(figures.automationsWithOneOccurrence).toBe(REQUESTS);
      expect(figures.completedInRecoveryRequired, 'completed runs sent to the operator').toBe(0);
      expect(problems.slice(0, 5), 'the final history holds every invariant').toEqual([]);
    },
    3 * WAIT_MS,
  );
});
