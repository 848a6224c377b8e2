// Embed the engine in a Node app with an in-process runtime: define an automation, let its slot come due on
// a simulated clock, and read the settled run and its verified receipt.
import {
  createEngine,
  FunctionRuntime,
  integrityOf,
  MemoryStore,
  SimulatedClock,
  verifyIntegrity,
} from 'coven-automata';

const clock = new SimulatedClock('2026-03-02T08:59:00Z');
const runtime = new FunctionRuntime('coven-code', async (request) => ({
  outcome: 'succeeded',
  output: `notes for ${request.occurrenceId}`,
}));
const store = new MemoryStore();
const engine = createEngine({ store, clock, runtimes: [runtime] });

let n = 0;
const command = (name, payload, expectedRevision) =>
  engine.commands.handle({
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: `example-${name}-${++n}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'example' }, channel: 'sdk' },
    intent: { statement: 'embedding example' },
    payload,
  });
const body = (revision, lifecycleState) => {
  const b = {
    schemaVersion: 'coven.automations.v1',
    automationId: 'daily-notes',
    revision,
    lifecycleState,
    display: { name: 'Daily notes' },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'utc' } },
    action: { variant: 'familiarInvocation', version: 1, prompt: 'Write the daily reflection.' },
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

for (const response of [
  await command('definition.create.v1', { definition: body(1, 'draft') }),
  await command('definition.revise.v1', { definition: body(2, 'paused') }, 1),
  await command('definition.activate.v1', { automationId: 'daily-notes' }, 2),
]) {
  if (response.outcome !== 'committed') throw new Error(`${response.command}: ${JSON.stringify(response.error)}`);
}

clock.set('2026-03-02T09:00:00Z');
await engine.tick(); // plans, claims and launches the 09:00 slot
await runtime.drain();
await engine.tick(); // observes the finished function and settles with a receipt

const history = await command('run.history.v1', { automationId: 'daily-notes' });
const [run] = history.result.runs;
const receipts = await store.read((reader) => reader.list('receipt'));
console.log(
  `run ${run.runId}: ${run.state}; receipt ${run.receiptRef} verifies: ${verifyIntegrity(receipts[0].data).valid}`,
);
if (run.state !== 'succeeded' || !verifyIntegrity(receipts[0].data).valid) process.exit(1);
