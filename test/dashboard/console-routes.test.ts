import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { Schedule } from '../../src/schedule/schedule.js';
import { command } from '../support/commands.js';
import { dashboardWorld, type DashboardWorld } from './world.js';

let world: DashboardWorld;
beforeEach(async () => {
  world = await dashboardWorld();
});
afterEach(async () => {
  await world.close();
});

const get = async (path: string, token?: string) => {
  const response = await fetch(`${world.url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

type Counts = { machines: Array<{ machine: string; byState: Record<string, number>; live: number }> };
const byMachine = (body: Record<string, unknown>) =>
  Object.fromEntries((body as Counts).machines.map((m) => [m.machine, m.byState]));

describe('GET /api/v1/schedule/preview', () => {
  test('the next slots after the engine clock, as the engine expands the schedule', async () => {
    const rrule = 'FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=8';
    const query = new URLSearchParams({ rrule, timezone: 'Europe/Berlin', count: '3' });
    const { status, body } = await get(`/api/v1/schedule/preview?${query.toString()}`);
    expect(status).toBe(200);
    const schedule = new Schedule(rrule, 'Europe/Berlin');
    const first = schedule.nextAfter(world.clock.now())!;
    const second = schedule.nextAfter(first)!;
    expect(body).toEqual({
      rrule,
      timezone: 'Europe/Berlin',
      from: '2026-03-02T08:00:00.000Z',
      scheduledTimes: [first, second, schedule.nextAfter(second)!].map((d) => d.toISOString()),
    });
    expect(body.scheduledTimes).toEqual([
      '2026-03-05T07:00:00.000Z',
      '2026-03-09T07:00:00.000Z',
      '2026-03-12T07:00:00.000Z',
    ]);
  });

  test('a schedule extension: the next slots of its cron expression, and its refusals typed', async () => {
    const schedule = JSON.stringify({ cron: '*/15 * * * *', timezone: 'Europe/Berlin' });
    const { status, body } = await get(`/api/v1/schedule/preview?${new URLSearchParams({ schedule, count: '3' })}`);
    expect(status).toBe(200);
    expect(body).toEqual({
      cron: '*/15 * * * *',
      timezone: 'Europe/Berlin',
      from: '2026-03-02T08:00:00.000Z',
      scheduledTimes: ['2026-03-02T08:15:00.000Z', '2026-03-02T08:30:00.000Z', '2026-03-02T08:45:00.000Z'],
    });
    for (const [bad, code] of [
      ['{"cron":', 'VALIDATION_FAILED'],
      ['"*/15 * * * *"', 'VALIDATION_FAILED'],
      [JSON.stringify({ cron: '0 0 9 * * *', timezone: 'utc' }), 'CAPABILITY_UNSUPPORTED'],
      [JSON.stringify({ rrule: 'FREQ=DAILY;BYHOUR=30', timezone: 'utc' }), 'VALIDATION_FAILED'],
    ]) {
      const answer = await get(`/api/v1/schedule/preview?${new URLSearchParams({ schedule: bad! })}`);
      expect(answer.body).toMatchObject({ outcome: 'rejected', error: { code } });
    }
  });

  test.each([
    ['timezone=utc', 400, 'VALIDATION_FAILED', 'rrule'],
    ['rrule=FREQ%3DDAILY%3BBYHOUR%3D9', 400, 'VALIDATION_FAILED', 'timezone'],
    ['rrule=FREQ%3DDAILY%3BBYHOUR%3D9&timezone=utc&count=0', 400, 'VALIDATION_FAILED', 'count'],
    ['rrule=FREQ%3DDAILY%3BBYHOUR%3D9&timezone=utc&count=51', 400, 'VALIDATION_FAILED', 'count'],
    ['rrule=FREQ%3DDAILY%3BBYHOUR%3D9&timezone=utc&count=2.5', 400, 'VALIDATION_FAILED', 'count'],
    ['rrule=FREQ%3DDAILY%3BBYHOUR%3D9&timezone=Mars%2FBase', 400, 'VALIDATION_FAILED', 'trigger.schedule.timezone'],
    ['rrule=FREQ%3DHOURLY&timezone=utc', 422, 'CAPABILITY_UNSUPPORTED', undefined],
    [`rrule=${'A'.repeat(201)}&timezone=utc`, 400, 'VALIDATION_FAILED', 'rrule'],
  ])('%s → %i %s, as a typed error envelope', async (query, status, code, field) => {
    const answer = await get(`/api/v1/schedule/preview?${query}`);
    expect(answer.status).toBe(status);
    expect(answer.body).toMatchObject({ outcome: 'rejected', error: { code, httpStatus: status } });
    if (field !== undefined) expect(answer.body).toMatchObject({ error: { details: { field } } });
  });
});

describe('GET /api/v1/machines/counts', () => {
  test('live entities per non-terminal state of each machine, following the engine', async () => {
    const idle = await get('/api/v1/machines/counts');
    expect(idle.status).toBe(200);
    expect(byMachine(idle.body)).toEqual({
      'definition.v1': { draft: 0, paused: 0, active: 1, disabled: 0, invalid: 0 },
      'occurrence.v1': {
        planned: 0,
        eligible: 0,
        claimed: 0,
        dispatching: 0,
        running: 0,
        recovering: 0,
        recovery_required: 0,
      },
      'run.v1': { accepted: 0, running: 0 },
      'attempt.v1': { adopted: 0, dispatching: 0, started: 0, observing: 0 },
    });
    const ran = await world.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily-notes' }));
    expect(ran.outcome).toBe('committed');
    const busy = byMachine((await get('/api/v1/machines/counts')).body);
    const live = (states: Record<string, number>) => Object.entries(states).filter(([, n]) => n > 0);
    expect(live(busy['occurrence.v1']!)).toEqual([['running', 1]]);
    expect(live(busy['run.v1']!)).toEqual([['running', 1]]);
    expect(live(busy['attempt.v1']!)).toEqual([['observing', 1]]);

    await world.pass(2);
    const settled = byMachine((await get('/api/v1/machines/counts')).body);
    expect(live(settled['occurrence.v1']!)).toEqual([]);
    expect(live(settled['attempt.v1']!)).toEqual([]);
  });

  test('automations the read ACL restricts are counted for the token holder only', async () => {
    const grant = command('x-coven-automata.acl.grant.v1', {
      automationId: 'daily-notes',
      principalId: 'principal:ana',
    });
    expect((await world.engine.commands.handle(grant)).outcome).toBe('committed');
    await world.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily-notes' }));
    const anonymous = byMachine((await get('/api/v1/machines/counts')).body);
    expect(anonymous['definition.v1']!.active).toBe(0);
    expect(anonymous['occurrence.v1']!.running).toBe(0);
    expect(anonymous['attempt.v1']!.observing).toBe(0);
    const operator = byMachine((await get('/api/v1/machines/counts', world.daemon.token)).body);
    expect(operator['definition.v1']!.active).toBe(1);
    expect(operator['occurrence.v1']!.running).toBe(1);
    expect(operator['run.v1']!.running).toBe(1);
  });
});
