import { describe, expect, test } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS } from '../../src/engine/parts.js';
import { CrashSwitch } from '../../src/testkit/crash-switch.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import * as ops from '../../src/testkit/conformance/authority-ops.js';
import { harness, type Harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { dailyBinding } from '../support/authority-binding.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

const BINDING = dailyBinding();

async function bound(binding: Record<string, unknown> = BINDING): Promise<Harness> {
  const h = await harness({ activate: true });
  const answers = await ops.applyBindings({ engine: h.engine, clock: h.clock }, [binding]);
  for (const a of answers) expect(a.outcome, JSON.stringify(a.error)).toBe('committed');
  return h;
}

let keys = 0;
async function runNow(h: Harness, time: string) {
  h.clock.set(at(time));
  const r = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: `run-now-${++keys}-key` }),
  );
  expect(r.outcome, JSON.stringify(r.error)).toBe('committed');
  return (await h.read.occurrences()).find((o) => o.occurrenceId === r.result!.occurrenceId)!;
}

const kinds = async (h: Harness, kind: string) => (await h.read.feed()).filter((e) => e.kind === kind);

describe('Runtime Authority at dispatch', () => {
  test('a bound definition whose authority verifies dispatches as before', async () => {
    const h = await bound();
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    expect(h.runtime.launches).toHaveLength(1);
    expect(await kinds(h, 'authority.refused')).toHaveLength(0);
  });

  test('refusals come in upstream order: unavailable, stale familiar, capability downgrade, approval', async () => {
    const h = await bound({
      ...BINDING,
      requiredCapabilities: ['session.create', 'fs.write'],
      approval: { required: true, nonce: 'n1', ttlMinutes: 60 },
    });
    const handle = { engine: h.engine, clock: h.clock };
    await ops.setAuthority(handle, { available: false });
    await ops.revokeFamiliar(handle, { automationId: 'daily' });
    await ops.setRuntimeCapabilities(handle, { automationId: 'daily', capabilities: ['session.create'] });
    const expected: Array<[string, () => Promise<unknown>]> = [
      ['authority: authority unavailable', () => ops.setAuthority(handle, { available: true })],
      ['authority: familiar revision stale or revoked', () => reRegisterAndRebind(h)],
      [
        'authority: capability downgrade',
        () =>
          ops.setRuntimeCapabilities(handle, { automationId: 'daily', capabilities: ['session.create', 'fs.write'] }),
      ],
      [
        'authority: approval required',
        () => ops.grantApproval(handle, { automationId: 'other', nonce: 'n1', ttlMinutes: 60 }),
      ],
      ['authority: approval issued for a different automation', async () => undefined],
    ];
    let minute = 10;
    for (const [reason, fix] of expected) {
      const occurrence = await runNow(h, `10:${String(minute++).padStart(2, '0')}:00`);
      expect(occurrence).toMatchObject({ state: 'failed' });
      expect(String(occurrence.stateReason).startsWith(reason), String(occurrence.stateReason)).toBe(true);
      await fix();
    }
    expect(h.runtime.launches).toHaveLength(0);
    const refused = await kinds(h, 'authority.refused');
    expect(refused.map((e) => e.payload.refusal)).toEqual([
      'authority_unavailable',
      'familiar_stale_or_revoked',
      'capability_downgrade',
      'approval_required',
      'approval_other_automation',
    ]);
    for (const e of refused) expect(validateAgainst('event-envelope.schema.json', e).problems).toEqual([]);
    // Nothing launched, so each refused run failed accepted -> failed, its attempt dispatching -> failed.
    for (const run of await h.read.runs()) expect(run).toMatchObject({ state: 'failed' });
    for (const attempt of await h.read.attempts()) expect(attempt).toMatchObject({ state: 'failed' });
  });

  test('a forged familiar revision (one the registry never held) is refused as stale', async () => {
    const h = await bound({ ...BINDING, familiarRevision: 7 });
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    expect(h.runtime.launches).toHaveLength(0);
    const [occurrence] = await h.read.occurrences();
    expect(occurrence).toMatchObject({ state: 'failed' });
    expect(occurrence!.stateReason).toMatch(/^authority: familiar revision stale or revoked: .*charm@7.*charm@1/);
  });

  test('TOCTOU: a revocation after the claim (the engine crashed between claim and dispatch) refuses the dispatch', async () => {
    const h = await bound();
    const crashes = new CrashSwitch();
    const crashing = new Engine(
      { store: h.store, clock: h.clock, runtimes: [h.runtime], instanceId: 'engine-a' },
      crashes.wrap(ENGINE_PARTS),
    );
    h.clock.set(at('09:00:00'));
    await crashes.tickCrashing(crashing, 'dispatch');
    expect((await h.read.occurrences())[0]).toMatchObject({ state: 'claimed' });
    await ops.revokeFamiliar({ engine: h.engine, clock: h.clock }, { automationId: 'daily' });
    h.clock.set(at('09:05:00'));
    await h.engine.tick();
    expect(h.runtime.launches).toHaveLength(0);
    const [occurrence] = await h.read.occurrences();
    expect(occurrence).toMatchObject({ state: 'failed' });
    expect(occurrence!.stateReason).toMatch(/stale or revoked/);
  });
});

async function reRegisterAndRebind(h: Harness) {
  // A new registration is revision 2: the binding must name it to verify again.
  const registered = await h.engine.commands.handle(
    command('x-coven-automata.authority.familiar.register.v1', { familiarId: 'charm' }),
  );
  expect(registered.result).toMatchObject({ revision: 2 });
  const got = await h.engine.commands.handle(command('definition.get.v1', { automationId: 'daily' }));
  const binding = (got.result!.definition as { extensions: Record<string, Record<string, unknown>> }).extensions[
    'coven.automations.authority.v1'
  ]!;
  await rebind(h, { ...binding, familiarRevision: 2 });
}

async function rebind(h: Harness, binding: Record<string, unknown>) {
  const got = await h.engine.commands.handle(command('definition.get.v1', { automationId: 'daily' }));
  const { integrity: _i, ...body } = structuredClone(got.result!.definition as Record<string, unknown>);
  const revision = body.revision as number;
  body.revision = revision + 1;
  (body.extensions as Record<string, unknown>)['coven.automations.authority.v1'] = binding;
  const { integrityOf } = await import('../../src/contract/digest.js');
  const r = await h.engine.commands.handle(
    command(
      'definition.revise.v1',
      { definition: { ...body, integrity: integrityOf(body) } },
      { expectedRevision: revision },
    ),
  );
  expect(r.outcome, JSON.stringify(r.error)).toBe('committed');
}
