import { describe, expect, test } from 'vitest';
import {
  AutomationClient,
  ContractError,
  createEngine,
  defineAutomation,
  defineFunctionAutomation,
  extensionTrigger,
  FunctionRuntime,
  MemoryStore,
  SCHEDULE_EXTENSION,
  SimulatedClock,
  validateAgainst,
  verifyIntegrity,
  type CommandPort,
  type ScheduleSpec,
} from '../../src/index.js';
import { launchRequests } from '../support/launch-request.js';

/** The engine's command handler, with every response it gives checked against command-response.schema.json. */
function checkedPort(port: CommandPort, seen: string[]): CommandPort {
  return {
    handle: async (envelope) => {
      const response = await port.handle(envelope);
      expect(validateAgainst('command-response.schema.json', response).problems).toEqual([]);
      seen.push(`${response.command} ${response.outcome}`);
      return response;
    },
    subscribe: (stream, options) => port.subscribe(stream, options),
  };
}

function setup() {
  const engine = createEngine({
    store: new MemoryStore(),
    clock: new SimulatedClock('2026-03-02T08:00:00Z'),
    runtimes: [new FunctionRuntime('reports', async () => ({ outcome: 'succeeded' }))],
  });
  const seen: string[] = [];
  let n = 0;
  const client = new AutomationClient(checkedPort(engine.commands, seen), { newKey: () => `client-key-${++n}` });
  return { engine, client, seen };
}

const report = (hour = 7) =>
  defineAutomation({ id: 'report', schedule: `FREQ=DAILY;BYHOUR=${hour}`, prompt: 'Report.', runtime: 'reports' });

describe('defineAutomation', () => {
  test('builds a definition the schema accepts, digested, in draft at revision 1, with the defaults', () => {
    const definition = report();
    expect(validateAgainst('automation-definition.schema.json', definition).problems).toEqual([]);
    expect(verifyIntegrity(definition as unknown as Record<string, unknown>).valid).toBe(true);
    expect(definition).toMatchObject({
      revision: 1,
      lifecycleState: 'draft',
      display: { name: 'report' },
      trigger: { schedule: { rrule: 'FREQ=DAILY;BYHOUR=7', timezone: 'utc' } },
      binding: { familiarId: 'reports', authority: { approvalPolicyRef: 'policy://coven-automata/embedded' } },
      runtimeRequirements: { runtimeId: 'reports', capabilities: [] },
      policies: { timeout: { perRunMinutes: 30 }, retry: { maxAttempts: 1, backoffPolicy: 'none' } },
    });
  });

  test('puts a rule the v1 trigger carries there, and a cron expression or a wider rule in the schedule extension', () => {
    const build = (schedule: ScheduleSpec) =>
      defineAutomation({ id: 'report', schedule, prompt: 'Report.', runtime: 'reports' });
    expect(report().extensions).toBeUndefined();
    const cron = build({ cron: '*/15 * * * *', timezone: 'Europe/Berlin' });
    const hourly = build('FREQ=HOURLY;BYMINUTE=30');
    const skipping = build({ rrule: 'FREQ=DAILY;BYHOUR=9', exdate: ['2026-12-25T09:00'], timezone: 'Europe/Berlin' });
    for (const [definition, extension] of [
      [cron, { cron: '*/15 * * * *', timezone: 'Europe/Berlin' }],
      [hourly, { rrule: 'FREQ=HOURLY;BYMINUTE=30', timezone: 'utc' }],
      [skipping, { rrule: 'FREQ=DAILY;BYHOUR=9', exdate: ['2026-12-25T09:00'], timezone: 'Europe/Berlin' }],
    ] as const) {
      expect(validateAgainst('automation-definition.schema.json', definition).problems).toEqual([]);
      expect(definition.extensions).toEqual({ [SCHEDULE_EXTENSION]: extension });
      expect(definition.trigger).toEqual(extensionTrigger(extension.timezone));
    }
  });

  test.each([
    ['an id the contract refuses', { id: 'no spaces' }, 'VALIDATION_FAILED'],
    ['a rule below the minimum interval', { schedule: 'FREQ=SECONDLY' }, 'CAPABILITY_UNSUPPORTED'],
    ['a malformed cron expression', { schedule: { cron: '*/15 * * *' } }, 'VALIDATION_FAILED'],
    [
      'a time zone that is not durable',
      { schedule: { rrule: 'FREQ=DAILY', timezone: 'local' } },
      'CAPABILITY_UNSUPPORTED',
    ],
  ])('refuses %s where it is built', (_, change, code) => {
    const spec = { id: 'report', schedule: 'FREQ=DAILY', prompt: 'Report.', runtime: 'reports', ...change };
    let thrown: unknown;
    try {
      defineAutomation(spec);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ContractError);
    expect((thrown as ContractError).code).toBe(code);
  });

  test("a function automation's runtime runs the handler: text is output, a throw fails the attempt", async () => {
    let fail = false;
    const built = defineFunctionAutomation({
      id: 'fn-job',
      schedule: 'FREQ=DAILY',
      handler: async (request) => {
        if (fail) throw new Error('database unreachable');
        return `ran ${request.prompt}`;
      },
    });
    expect(built.runtime.runtimeId).toBe('fn.fn-job');
    expect(built.definition.runtimeRequirements?.runtimeId).toBe('fn.fn-job');
    const request = launchRequests((n) => `fn-job-${n}`);
    const now = new Date('2026-03-02T09:00:00Z');
    const ok = await built.runtime.launch(request({ prompt: built.definition.action.prompt }), now);
    fail = true;
    const failed = await built.runtime.launch(request(), now);
    await built.runtime.drain();
    if (ok.outcome !== 'started' || failed.outcome !== 'started') throw new Error('launch refused');
    expect(await built.runtime.observe(ok.sessionId)).toMatchObject({ status: 'exited', outcome: 'succeeded' });
    expect(await built.runtime.sessionOutput(ok.sessionId)).toBe('ran fn-job');
    expect(await built.runtime.observe(failed.sessionId)).toMatchObject({ status: 'exited', outcome: 'failed' });
  });
});

describe('AutomationClient', () => {
  test('createAndActivate walks create, revise and activate; run again it replays; another body conflicts', async () => {
    const { client, seen } = setup();
    const first = await client.createAndActivate(report());
    expect(first).toMatchObject({ ok: true, replayed: false, value: { lifecycleState: 'active', revision: 3 } });
    expect(seen).toEqual([
      'definition.create.v1 committed',
      'definition.revise.v1 committed',
      'definition.activate.v1 committed',
    ]);
    expect(await client.createAndActivate(report())).toEqual({ ...first, replayed: true });
    const other = await client.createAndActivate(report(8));
    expect(other.ok).toBe(false);
    expect(other.error).toMatchObject({ code: 'REVISION_CONFLICT', httpStatus: 409, currentRevision: 3 });
  });

  test('revise, pause and activate expect the current revision; a refusal is a typed error, not a throw', async () => {
    const { client } = setup();
    await client.createAndActivate(report());
    const revised = await client.revise(report(9));
    expect(revised).toMatchObject({ ok: true, value: { revision: 4, lifecycleState: 'active' } });
    const paused = await client.pause('report');
    expect(paused).toMatchObject({ ok: true, value: { revision: 5, lifecycleState: 'paused' } });
    const refused = await client.runNow('report');
    expect(refused).toMatchObject({ ok: false, error: { code: 'ILLEGAL_TRANSITION', httpStatus: 422 } });
    const activated = await client.activate('report');
    expect(activated).toMatchObject({ ok: true, value: { revision: 6, lifecycleState: 'active' } });
    const got = await client.get('report');
    if (!got.ok) throw new Error(got.error.message);
    expect([got.value.revision, got.value.currentRevision, got.value.definition.trigger.schedule.rrule]).toEqual([
      6,
      6,
      'FREQ=DAILY;BYHOUR=9',
    ]);
    expect(verifyIntegrity(got.value.definition as unknown as Record<string, unknown>).valid).toBe(true);
    const missing = await client.pause('nope');
    expect(missing).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', httpStatus: 404 } });
  });

  test('list and history read typed results', async () => {
    const { client } = setup();
    await client.createAndActivate(report());
    const listed = await client.list();
    if (!listed.ok) throw new Error(listed.error.message);
    expect(listed.value.definitions.map((d) => [d.automationId, d.lifecycleState, d.revision])).toEqual([
      ['report', 'active', 3],
    ]);
    const history = await client.history('report');
    expect(history).toMatchObject({ ok: true, value: { automationId: 'report', runs: [] } });
  });

  test('send with an adoption key of its own replays a repeat instead of acting twice', async () => {
    const { client } = setup();
    await client.createAndActivate(report());
    const once = await client.send(
      'definition.pause.v1',
      { automationId: 'report' },
      {
        adoptionKey: 'pause-report',
        expectedRevision: 3,
      },
    );
    const again = await client.send(
      'definition.pause.v1',
      { automationId: 'report' },
      {
        adoptionKey: 'pause-report',
        expectedRevision: 3,
      },
    );
    expect(once).toMatchObject({ ok: true, replayed: false, value: { revision: 4 } });
    expect(again).toEqual({ ...once, replayed: true });
  });

  test('settled answers a refusal at once and stops waiting when its signal aborts', async () => {
    const { client } = setup();
    expect(await client.settled('occ-none')).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    await client.createAndActivate(report());
    const started = await client.runNow('report');
    if (!started.ok) throw new Error(started.error.message);
    // No engine is running, so nothing settles the occurrence: only the signal ends the wait.
    const waiting = new AbortController();
    const settled = client.settled(started.value.occurrenceId, { signal: waiting.signal });
    waiting.abort(new Error('stopped waiting'));
    await expect(settled).rejects.toThrow('stopped waiting');
  });

  test("subscribe yields an automation's changes as they commit", async () => {
    const { client } = setup();
    const following = new AbortController();
    const kinds: string[] = [];
    const read = (async () => {
      for await (const event of client.subscribe('report', { signal: following.signal })) {
        kinds.push(event.kind);
        if (kinds.length === 3) following.abort();
      }
    })();
    await client.createAndActivate(report());
    await read;
    expect(kinds).toEqual(['definition.created', 'definition.revised', 'definition.activated']);
  });
});
