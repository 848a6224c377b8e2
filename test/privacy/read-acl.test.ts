import { describe, expect, test } from 'vitest';
import type { CommandResponse } from '../../src/command-handler/envelope.js';
import { ANONYMOUS_CALLER, OPERATOR_CALLER, type ReadCaller } from '../../src/domain/read-acl.js';
import { KINDS } from '../../src/domain/records.js';
import { applyBindings } from '../../src/testkit/conformance/authority-ops.js';
import { command, definitionBody, expectRejected, expectValidResponse } from '../support/commands.js';
import { harness, type Harness, type HarnessOptions } from '../support/engine-harness.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;
const ANA = 'principal:ana';
const EVE = 'principal:eve';

/** A command as `principalId` names itself in its envelope. */
function as(principalId: string, name: string, payload: Record<string, unknown>) {
  const envelope = command(name, payload);
  return { ...envelope, origin: { ...envelope.origin, principal: { principalId } } };
}

async function send(
  h: Harness,
  principalId: string,
  name: string,
  payload: Record<string, unknown>,
  caller?: ReadCaller,
) {
  return expectValidResponse(await h.engine.commands.handle(as(principalId, name, payload), caller));
}

/** `daily` ran once and settled (a receipt), `other` is an unrestricted draft; then `daily` is granted to Ana. */
async function restrictedWorld(options: HarnessOptions = {}) {
  const h = await harness(options);
  await h.ok(command('definition.create.v1', { definition: definitionBody('other') }));
  h.clock.set(at('09:00:00'));
  await h.engine.tick();
  h.clock.set(at('09:01:30'));
  await h.engine.tick();
  const [occurrence] = await h.read.occurrences();
  const [run] = await h.read.runs();
  const [receipt] = await h.read.receipts();
  expect(occurrence?.state).toBe('succeeded');
  await h.ok(command('x-coven-automata.acl.grant.v1', { automationId: 'daily', principalId: ANA }));
  const ids = {
    occurrenceId: String(occurrence!.occurrenceId),
    runId: String(run!.runId),
    receiptId: String(receipt!.receiptId),
  };
  return { h, ...ids };
}

/** Every read of one automation's records, by what it names. */
function singleReads(ids: { occurrenceId: string; runId: string; receiptId: string }): Array<[string, object]> {
  return [
    ['definition.get.v1', { automationId: 'daily' }],
    ['definition.health.v1', { automationId: 'daily' }],
    ['run.history.v1', { automationId: 'daily' }],
    ['occurrence.list.v1', { automationId: 'daily' }],
    ['occurrence.get.v1', { occurrenceId: ids.occurrenceId }],
    ['occurrence.history.v1', { occurrenceId: ids.occurrenceId }],
    ['run.get.v1', { runId: ids.runId }],
    ['receipt.get.v1', { receiptId: ids.receiptId }],
    ['receipt.get.v1', { runId: ids.runId }],
    ['events.read.v1', { stream: { kind: 'automation', id: 'daily' } }],
    ['events.read.v1', { stream: { kind: 'occurrence', id: ids.occurrenceId } }],
    ['events.read.v1', { stream: { kind: 'run', id: ids.runId } }],
    ['events.subscribe.v1', { stream: { kind: 'automation', id: 'daily' } }],
  ];
}

/** The refusal: AUTHORITY_REQUIRED 403 saying "not authorized", naming only what the caller named. */
function expectRefused(response: CommandResponse, named: string): void {
  expectRejected(response, 'AUTHORITY_REQUIRED', 403);
  expect(response.error!.message).toContain('not authorized');
  expect(response.result).toBeUndefined();
  const text = JSON.stringify(response.error);
  expect(text).not.toContain('Write the daily notes');
  if (!named.includes('daily')) expect(text).not.toContain('daily');
}

describe('the read ACL over one automation', () => {
  test('an automation without an ACL stays readable by every principal and by unauthenticated callers', async () => {
    const h = await harness();
    for (const caller of [undefined, ANONYMOUS_CALLER]) {
      const got = await send(h, EVE, 'definition.get.v1', { automationId: 'daily' }, caller);
      expect(got.outcome).toBe('committed');
      expect((await send(h, EVE, 'events.read.v1', { stream: { kind: 'feed', id: 'all' } }, caller)).outcome).toBe(
        'committed',
      );
    }
  });

  test('every read of it: the granted principal and the operator read, another principal and nobody are refused', async () => {
    const { h, ...ids } = await restrictedWorld();
    for (const [name, payload] of singleReads(ids)) {
      const label = `${name} ${JSON.stringify(payload)}`;
      expect((await send(h, ANA, name, payload as Record<string, unknown>)).outcome, label).toBe('committed');
      expect((await send(h, EVE, name, payload as Record<string, unknown>, OPERATOR_CALLER)).outcome, label).toBe(
        'committed',
      );
      const named = JSON.stringify(payload);
      expectRefused(await send(h, EVE, name, payload as Record<string, unknown>), named);
      // An unauthenticated caller's envelope may claim Ana: the claim is not believed.
      expectRefused(await send(h, ANA, name, payload as Record<string, unknown>, ANONYMOUS_CALLER), named);
    }
    const refused = await send(h, EVE, 'occurrence.get.v1', { occurrenceId: ids.occurrenceId });
    expect(refused.error!.message).toBe(`principal ${EVE} is not authorized to read occurrence ${ids.occurrenceId}`);
  });

  test('lists leave it out, before paging, for those who may not read it', async () => {
    const { h } = await restrictedWorld();
    const listed = async (principalId: string) =>
      ((await send(h, principalId, 'definition.list.v1', {})).result!.definitions as Array<{ automationId: string }>)
        .map((d) => d.automationId)
        .sort();
    expect(await listed(ANA)).toEqual(['daily', 'other']);
    expect(await listed(EVE)).toEqual(['other']);
    const page = await send(h, EVE, 'definition.list.v1', { limit: 1 });
    expect(page.result).toMatchObject({ cursor: { hasMore: false }, revisionById: { other: 1 } });
    const occurrences = await send(h, EVE, 'occurrence.list.v1', {});
    expect(occurrences.result!.occurrences).toEqual([]);
    expect((await send(h, ANA, 'occurrence.list.v1', {})).result!.occurrences).toHaveLength(1);
    const status = await send(h, EVE, 'scheduler.status.v1', {});
    expect(status.result!.planning).toEqual([]);
    expect((await send(h, ANA, 'scheduler.status.v1', {})).result!.planning).toHaveLength(1);
  });

  test('the global feed is read only by a caller who may read every restricted automation', async () => {
    const { h } = await restrictedWorld();
    const feed = { stream: { kind: 'feed', id: 'all' } };
    expect((await send(h, ANA, 'events.read.v1', feed)).outcome).toBe('committed');
    expectRefused(await send(h, EVE, 'events.read.v1', feed), 'feed');
    expectRefused(await send(h, EVE, 'events.subscribe.v1', feed), 'feed');
    expect((await send(h, EVE, 'events.read.v1', { stream: { kind: 'automation', id: 'other' } })).outcome).toBe(
      'committed',
    );
  });

  test('the principal its authority binding runs as reads it without a grant', async () => {
    const { h } = await restrictedWorld();
    const binding = {
      automationId: 'daily',
      principalId: 'principal:run-as',
      familiarId: 'charm',
      familiarRevision: 1,
      runtime: 'coven-code',
      requiredCapabilities: [],
    };
    // applyBindings reads the definition as the conformance runner, which needs a grant like anyone else.
    await h.ok(command('x-coven-automata.acl.grant.v1', { automationId: 'daily', principalId: 'conformance-runner' }));
    for (const a of await applyBindings({ engine: h.engine, clock: h.clock }, [binding]))
      expect(a.outcome, JSON.stringify(a.error)).toBe('committed');
    expect((await send(h, 'principal:run-as', 'run.history.v1', { automationId: 'daily' })).outcome).toBe('committed');
    expectRefused(await send(h, EVE, 'run.history.v1', { automationId: 'daily' }), 'daily');
  });

  test('revoke withdraws one grant and keeps the restriction; lift makes it readable by all again', async () => {
    const { h } = await restrictedWorld();
    const get = { automationId: 'daily' };
    const revoked = await send(h, 'principal:test', 'x-coven-automata.acl.revoke.v1', { ...get, principalId: ANA });
    expect(revoked.result).toEqual({ automationId: 'daily', restricted: true, readers: [] });
    expectRefused(await send(h, ANA, 'definition.get.v1', get), 'daily');
    expect((await send(h, ANA, 'definition.get.v1', get, OPERATOR_CALLER)).outcome).toBe('committed');
    const lifted = await send(h, 'principal:test', 'x-coven-automata.acl.lift.v1', get);
    expect(lifted.result).toEqual({ automationId: 'daily', restricted: false, readers: [] });
    expect((await send(h, EVE, 'definition.get.v1', get)).outcome).toBe('committed');
    expect((await h.store.read((r) => r.list('read-acl'))).length).toBe(0);
  });

  test('ACL commands refuse what does not exist, and a repeated grant changes nothing', async () => {
    const { h } = await restrictedWorld();
    const acl = (name: string, payload: Record<string, unknown>) =>
      send(h, 'principal:test', `x-coven-automata.acl.${name}.v1`, payload);
    expectRejected(await acl('grant', { automationId: 'ghost', principalId: ANA }), 'NOT_FOUND', 404);
    expectRejected(await acl('revoke', { automationId: 'daily', principalId: EVE }), 'NOT_FOUND', 404);
    expectRejected(await acl('lift', { automationId: 'other' }), 'NOT_FOUND', 404);
    expectRejected(await acl('grant', { automationId: 'daily', principalId: 'has space' }), 'VALIDATION_FAILED', 400);
    const again = await acl('grant', { automationId: 'daily', principalId: ANA });
    expect(again.result).toEqual({ automationId: 'daily', restricted: true, readers: [ANA] });
    const both = await acl('grant', { automationId: 'daily', principalId: 'principal:bo' });
    expect(both.result!.readers).toEqual([ANA, 'principal:bo']);
  });

  test('history retention compacted stays restricted: the refusal replaces the NOT_FOUND that shows its final state', async () => {
    const { h, occurrenceId, runId } = await restrictedWorld({ retention: { windowDays: { standard: 1 / 1440 } } });
    h.clock.set(at('09:20:00'));
    await h.engine.tick();
    expect(await h.store.read((r) => r.get(KINDS.occurrence, occurrenceId))).toBeUndefined();
    const compacted = await send(h, ANA, 'occurrence.get.v1', { occurrenceId });
    expect(expectRejected(compacted, 'NOT_FOUND', 404).error!.details).toHaveProperty('finalState');
    expectRefused(await send(h, EVE, 'occurrence.get.v1', { occurrenceId }), occurrenceId);
    expectRefused(await send(h, EVE, 'run.get.v1', { runId }), runId);
    const stream = { kind: 'occurrence', id: occurrenceId };
    expectRefused(await send(h, EVE, 'events.read.v1', { stream }), occurrenceId);
  });

  test('ids the store never held answer NOT_FOUND as before, for every principal', async () => {
    const { h } = await restrictedWorld();
    expectRejected(await send(h, EVE, 'occurrence.get.v1', { occurrenceId: 'ghost' }), 'NOT_FOUND', 404);
    expectRejected(await send(h, EVE, 'definition.get.v1', { automationId: 'ghost' }), 'NOT_FOUND', 404);
  });
});
