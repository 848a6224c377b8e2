import { describe, expect, test } from 'vitest';
import { CAPABILITY_PROFILE } from '../../src/contract/capabilities.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { extensionTrigger, SCHEDULE_EXTENSION } from '../../src/schedule/schedule-extension.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, scheduledBy } from '../support/engine-harness.js';

const QUARTER_HOURS = { cron: '*/15 * * * *', timezone: 'Europe/Berlin' };

describe('a definition scheduled by x-coven-automata.schedule.v1', () => {
  test('plans each cron slot across the spring-forward gap, pins the cron as its trigger identity, validates', async () => {
    // Europe/Berlin skips 02:00–02:59 on 2026-03-29: 01:45 CET (00:45Z) is followed by 03:00 CEST (01:00Z).
    const h = await harness({ start: '2026-03-29T00:40:00.000Z', schedule: QUARTER_HOURS });
    for (const at of ['2026-03-29T00:45:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T01:15:00.000Z']) {
      h.clock.set(at);
      expect((await h.engine.tick()).planned).toBe(1);
      h.clock.advance({ minutes: 2 });
      expect((await h.engine.tick()).settled).toBe(1);
    }
    const occurrences = await h.read.occurrences();
    expect(occurrences.map((o) => o.scheduledFor).sort()).toEqual([
      '2026-03-29T00:45:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T01:15:00.000Z',
    ]);
    for (const o of occurrences) {
      expect(o).toMatchObject({
        state: 'succeeded',
        triggerIdentity: { kind: 'schedule.slot', rruleRef: '*/15 * * * *' },
      });
      expect(validateAgainst('automation-occurrence.schema.json', o).problems).toEqual([]);
    }
    const definition = (await h.engine.commands.handle(command('definition.get.v1', { automationId: 'daily' }))).result!
      .definition as Record<string, unknown>;
    expect(validateAgainst('automation-definition.schema.json', definition).problems).toEqual([]);
    expect(definition.extensions).toMatchObject({ [SCHEDULE_EXTENSION]: QUARTER_HOURS });
    const planned = (await h.read.feed()).filter(
      (e) => e.kind === 'occurrence.transitioned' && e.payload.to === 'planned',
    );
    expect(planned).toHaveLength(3);
  });

  test('missed slots collapse into the latest, as the contract misfire policy says, and the health read names the next', async () => {
    const h = await harness({ start: '2026-12-07T08:00:00.000Z', schedule: QUARTER_HOURS });
    h.clock.set('2026-12-07T09:05:00.000Z');
    expect((await h.engine.tick()).planned).toBe(1);
    const [occurrence] = await h.read.occurrences();
    expect(occurrence!.scheduledFor).toBe('2026-12-07T09:00:00.000Z');
    const misfire = (await h.read.feed()).find((e) => e.kind === 'occurrence.misfire_recorded')!;
    // Activated at 08:00, so 08:00 is its first slot.
    expect(misfire.payload.collapsedSlots).toEqual([
      '2026-12-07T08:00:00.000Z',
      '2026-12-07T08:15:00.000Z',
      '2026-12-07T08:30:00.000Z',
      '2026-12-07T08:45:00.000Z',
    ]);
    const health = await h.engine.commands.handle(command('definition.health.v1', { automationId: 'daily' }));
    expect(health.result).toMatchObject({ health: { nextDueAt: '2026-12-07T09:15:00.000Z' } });
  });

  test('a revise moves between the v1 trigger and the extension; planning follows the current revision', async () => {
    const h = await harness({ start: '2026-03-02T08:50:00.000Z' });
    const revise = (revision: number, extra: Record<string, unknown>) =>
      h.ok(
        command(
          'definition.revise.v1',
          { definition: definitionBody('daily', { revision: revision + 1, lifecycleState: 'active', extra }) },
          { expectedRevision: revision },
        ),
      );
    const policies = h.body(3, 'paused').policies;
    await revise(3, { policies, ...scheduledBy({ cron: '20 * * * *', timezone: 'utc' }) });
    h.clock.set('2026-03-02T09:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    h.clock.set('2026-03-02T09:20:00.000Z');
    expect((await h.engine.tick()).planned).toBe(1);
    await revise(4, { policies });
    h.clock.set('2026-03-02T10:20:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    expect((await h.read.occurrences()).map((o) => o.scheduledFor)).toEqual(['2026-03-02T09:20:00.000Z']);
  });

  test('is advertised, and refused when malformed, unsupported, unnamed by the trigger or unknown', async () => {
    expect(CAPABILITY_PROFILE.extensions.map((e) => e.name)).toContain(SCHEDULE_EXTENSION);
    const h = await harness({ activate: false });
    const create = async (id: string, extra: Record<string, unknown>) => {
      const response = await h.engine.commands.handle(
        command('definition.create.v1', { definition: definitionBody(id, { extra }) }),
      );
      return response.outcome === 'rejected'
        ? `${response.error!.code} ${String((response.error!.details as { variant?: string })?.variant ?? '')}`.trim()
        : 'accepted';
    };
    const cron = (expression: string) => scheduledBy({ cron: expression, timezone: 'utc' });
    expect(await create('fine', cron('0 9 * * MON-FRI'))).toBe('accepted');
    expect(await create('bad-field', cron('0 25 * * *'))).toBe('VALIDATION_FAILED');
    expect(await create('seconds', cron('0 0 9 * * *'))).toBe('CAPABILITY_UNSUPPORTED cron.seconds');
    expect(
      await create('unnamed', {
        extensions: { [SCHEDULE_EXTENSION]: { cron: '0 9 * * *', timezone: 'utc' } },
      }),
    ).toBe('VALIDATION_FAILED');
    expect(await create('marker-alone', { trigger: extensionTrigger('utc') })).toBe(
      'CAPABILITY_UNSUPPORTED rrule.FREQ.MINUTELY',
    );
    expect(await create('unknown', { extensions: { 'x-coven-automata.overlap.v9': { policy: 'allow' } } })).toBe(
      'CAPABILITY_UNSUPPORTED x-coven-automata.overlap.v9',
    );
    expect(await create('foreign', { extensions: { 'org.example.note.v1': { kept: true } } })).toBe('accepted');
    const listed = await h.engine.commands.handle(command('definition.list.v1', { lifecycleState: 'all' }));
    expect((listed.result!.definitions as Array<{ automationId: string }>).map((d) => d.automationId).sort()).toEqual([
      'daily',
      'fine',
      'foreign',
    ]);
  });
});
