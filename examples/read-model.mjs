// Subscribe to the changefeed and project a read model (latest state per occurrence), the way a UI would:
// at-least-once delivery, deduplicated by event id, in commit order.
import { createEngine, integrityOf, MemoryStore, SimulatedClock, SimulatedRuntime } from 'coven-automata';

const clock = new SimulatedClock('2026-03-02T08:00:00Z');
const store = new MemoryStore();
const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
const engine = createEngine({ store, clock, runtimes: [runtime] });

const readModel = new Map(); // occurrenceId -> state
const seen = new Set();
const controller = new AbortController();
const consumer = (async () => {
  for await (const event of engine.commands.subscribe({ kind: 'feed', id: 'all' }, { signal: controller.signal })) {
    if (seen.has(event.eventId)) continue; // redelivery
    seen.add(event.eventId);
    if (event.kind === 'occurrence.transitioned') readModel.set(event.occurrenceId, event.payload.to);
  }
})();

let n = 0;
const command = (name, payload, expectedRevision) =>
  engine.commands.handle({
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: `read-model-${++n}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'example' }, channel: 'sdk' },
    intent: { statement: 'read model example' },
    payload,
  });
const body = (revision, lifecycleState) => {
  const b = {
    schemaVersion: 'coven.automations.v1',
    automationId: 'twice-daily',
    revision,
    lifecycleState,
    display: { name: 'Twice daily' },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule: 'FREQ=DAILY;BYHOUR=9,17', timezone: 'utc' } },
    action: { variant: 'familiarInvocation', version: 1, prompt: 'Summarise.' },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://charm' },
    },
    runtimeRequirements: { runtimeId: 'coven-code', capabilities: [] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
  };
  return { ...b, integrity: integrityOf(b) };
};
await command('definition.create.v1', { definition: body(1, 'draft') });
await command('definition.revise.v1', { definition: body(2, 'paused') }, 1);
await command('definition.activate.v1', { automationId: 'twice-daily' }, 2);

for (const at of ['2026-03-02T09:00:00Z', '2026-03-02T09:02:00Z', '2026-03-02T17:00:00Z', '2026-03-02T17:02:00Z']) {
  clock.set(at);
  await engine.tick();
}
await new Promise((resolve) => setImmediate(resolve));
controller.abort();
await consumer;

console.log(Object.fromEntries(readModel));
const states = [...readModel.values()];
if (states.length !== 2 || states.some((s) => s !== 'succeeded')) process.exit(1);
